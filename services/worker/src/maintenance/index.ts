import {
  type Clock,
  type Config,
  type CronJobData,
  createCronScheduler,
  createEventScheduler,
  type EventJobData,
  type Logger,
  MAINTENANCE_JOBS,
  QUEUE_NAMES,
  type Redis,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import { Queue } from "bullmq";
import { createMaintenanceWorker, type MaintenanceWorker } from "./maintenance-worker.ts";
import { createReconciler } from "./reconciler.ts";

/** The maintenance side of a worker process: the reconciler (contract §6). */
export function createMaintenance(deps: {
  config: Config;
  db: Db;
  redis: Redis;
  clock: Clock;
  logger: Logger;
}): MaintenanceWorker {
  const { config, redis, logger } = deps;
  const eventQueue = new Queue<EventJobData>(QUEUE_NAMES.events, { connection: redis, prefix: config.QUEUE_PREFIX });
  const cronQueue = new Queue<CronJobData>(QUEUE_NAMES.cron, { connection: redis, prefix: config.QUEUE_PREFIX });
  const reconcile = createReconciler({
    db: deps.db,
    clock: deps.clock,
    config,
    eventQueue,
    cronQueue,
    eventScheduler: createEventScheduler(eventQueue, config, deps.clock),
    cronScheduler: createCronScheduler(cronQueue),
    logger,
  });
  const worker = createMaintenanceWorker(
    config,
    redis,
    [{ name: MAINTENANCE_JOBS.reconcile, everyMs: config.RECONCILE_INTERVAL_MS, run: reconcile }],
    logger,
  );
  return {
    start: () => worker.start(),
    async stop() {
      await worker.stop();
      await Promise.all([eventQueue.close(), cronQueue.close()]);
    },
  };
}
