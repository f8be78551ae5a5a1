import type { Clock, Config, CronJobSchedulers, EventQueue, Logger, Redis } from "@punctual/core";
import type { Db } from "@punctual/db";
import type { ApiMetrics } from "./metrics/api-metrics.ts";

/** Everything the HTTP API needs from outside; tests pass their own database, Redis and clock. */
export interface ApiDeps {
  config: Config;
  db: Db;
  redis: Redis;
  clock: Clock;
  logger: Logger;
  /** Puts events on the delayed queue; failures leave them Pending for the reconciler. */
  eventQueue: EventQueue;
  /** Puts cron jobs on BullMQ job schedulers; failures are repaired by the reconciler. */
  cronJobSchedulers: CronJobSchedulers;
  /** The process's metrics registry (server.ts passes one with queue depth); a fresh one when absent. */
  metrics?: ApiMetrics;
}
