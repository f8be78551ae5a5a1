import type { AdmissionStore, Clock, Config, CronJobSchedulers, EventQueue, Logger, Redis } from "@punctual/core";
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
  /**
   * What the workers keep in Redis about flows and destinations (contract §10.2, §10.3): server.ts
   * passes one on its fail-fast connection; when absent, createApp makes one on `redis`.
   */
  admissionStore?: AdmissionStore;
}

/** The API's dependencies once createApp has filled in what was left out. */
export type ResolvedApiDeps = ApiDeps & { admissionStore: AdmissionStore };
