import {
  type Clock,
  type Config,
  CRON_QUEUE_SETTINGS,
  type CronJobData,
  createCronJobSchedulers,
  createEventQueue,
  createEventQueues,
  type Logger,
  MAINTENANCE_JOBS,
  QUEUE_NAMES,
  type Redis,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import { Queue } from "bullmq";
import type { Bookkeeping } from "../delivery/bookkeeping.ts";
import type { WorkerMetrics } from "../metrics/worker-metrics.ts";
import { createFailureNotices, createMailer } from "./failure-notices.ts";
import { createMaintenanceWorker, type MaintenanceTask, type MaintenanceWorker } from "./maintenance-worker.ts";
import { createReconciler } from "./reconciler.ts";
import { createRetention, DEFAULT_RETENTION_BUDGET_MS } from "./retention.ts";

/**
 * The maintenance side of a worker process: the reconciler (contract §6), retention and, when
 * SMTP_URL is set, failure notices (contract §8).
 */
export function createMaintenance(deps: {
  config: Config;
  db: Db;
  redis: Redis;
  clock: Clock;
  logger: Logger;
  /** Maintenance runs wait for lulls in this worker's deliveries (none: they never wait). */
  bookkeeping?: Pick<Bookkeeping, "maintenanceRun">;
  /** Counts what the reconciler's runs in this worker did (/metrics). */
  metrics?: Pick<WorkerMetrics, "failedToQueue">;
}): MaintenanceWorker {
  const { config, redis, logger } = deps;
  // Every shard's queue, whichever shards this process consumes: the reconciler checks all events.
  const eventQueues = createEventQueues(redis, config);
  const cronQueue = new Queue<CronJobData>(QUEUE_NAMES.cron, {
    connection: redis,
    prefix: config.QUEUE_PREFIX,
    settings: CRON_QUEUE_SETTINGS,
  });
  const reconcile = createReconciler({
    db: deps.db,
    clock: deps.clock,
    config,
    eventQueues,
    cronQueue,
    eventQueue: createEventQueue(eventQueues, config, deps.clock),
    cronJobSchedulers: createCronJobSchedulers(cronQueue),
    logger,
    redis,
  });
  const tasks: MaintenanceTask[] = [
    {
      name: MAINTENANCE_JOBS.reconcile,
      everyMs: config.RECONCILE_INTERVAL_MS,
      maxRunMs: 60_000,
      async run(pause) {
        const report = await reconcile(pause);
        deps.metrics?.failedToQueue(report.eventsFailedToQueue);
        return report;
      },
    },
    {
      name: MAINTENANCE_JOBS.retention,
      everyMs: config.RETENTION_INTERVAL_MS,
      maxRunMs: DEFAULT_RETENTION_BUDGET_MS,
      run: createRetention({ db: deps.db, clock: deps.clock, config, logger }),
    },
  ];
  // Without SMTP_URL the task is not registered at all (and its scheduler, if any, is removed).
  const mailer = config.SMTP_URL === undefined ? undefined : createMailer(config.SMTP_URL);
  if (mailer) {
    tasks.push({
      name: MAINTENANCE_JOBS.failureNotices,
      everyMs: config.FAILURE_NOTICE_INTERVAL_MS,
      maxRunMs: 5 * 60_000,
      run: createFailureNotices({ db: deps.db, clock: deps.clock, config, mailer, logger, redis }),
    });
  }
  const worker = createMaintenanceWorker(config, redis, tasks, logger, deps.bookkeeping);
  return {
    start: () => worker.start(),
    async stop() {
      await worker.stop();
      await Promise.all([...eventQueues.map((queue) => queue.close()), cronQueue.close()]);
      mailer?.close();
    },
  };
}
