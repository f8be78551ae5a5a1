import type { Server } from "node:http";
import {
  type Clock,
  type Config,
  type CronJobData,
  createLogger,
  createRedis,
  type EventJobData,
  type Logger,
  QUEUE_NAMES,
  type Redis,
  systemClock,
} from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { Worker } from "bullmq";
import { createCronRunProcessor } from "./cron-jobs/deliver-cron-run.ts";
import { createSender } from "./delivery/send.ts";
import { createEventProcessor } from "./events/deliver-event.ts";
import { startHealthServer } from "./health-server.ts";
import { createMaintenance } from "./maintenance/index.ts";
import { createWorkerMetrics } from "./metrics/worker-metrics.ts";

/** Everything a delivery worker needs from outside; tests pass their own database, Redis and clock. */
export interface WorkerDeps {
  config: Config;
  db: Db;
  /** A connection made with `createRedis` (BullMQ duplicates it for its blocking reads). */
  redis: Redis;
  clock: Clock;
  logger: Logger;
}

export interface DeliveryWorker {
  /** Starts taking jobs and serving /healthz; resolves once both are up. */
  start(): Promise<void>;
  /** Stops taking jobs and waits for the deliveries in flight to finish. */
  stop(): Promise<void>;
  /** The health server's port (useful when configured as 0). */
  readonly healthPort: number | undefined;
}

/** A delivery worker process: consumes the events and cron queues and delivers each event and run. */
export function createWorker(deps: WorkerDeps): DeliveryWorker {
  const { config, logger } = deps;
  const sender = createSender({
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    allowPrivateDestinations: config.ALLOW_PRIVATE_DESTINATIONS,
    maxConcurrent: config.WORKER_CONCURRENCY,
    maxHeld: config.WORKER_HELD_REQUESTS,
  });
  const metrics = createWorkerMetrics(() => sender.held);
  let eventWorker: Worker<EventJobData> | undefined;
  let cronWorker: Worker<CronJobData> | undefined;
  let health: { server: Server; port: number } | undefined;
  const maintenance = createMaintenance(deps);

  return {
    get healthPort() {
      return health?.port;
    },
    async start() {
      const workerOptions = {
        connection: deps.redis,
        prefix: config.QUEUE_PREFIX,
        concurrency: config.WORKER_PREPARED_JOBS,
        lockDuration: config.JOB_LOCK_MS,
        stalledInterval: config.JOB_LOCK_MS,
        autorun: false,
      };
      eventWorker = new Worker<EventJobData>(
        QUEUE_NAMES.events,
        createEventProcessor({ db: deps.db, clock: deps.clock, config, sender, logger, metrics: metrics.event }),
        workerOptions,
      );
      cronWorker = new Worker<CronJobData>(
        QUEUE_NAMES.cron,
        createCronRunProcessor({ db: deps.db, clock: deps.clock, config, sender, logger, metrics: metrics.cron }),
        workerOptions,
      );
      for (const [kind, worker] of [
        ["event", eventWorker],
        ["cron", cronWorker],
      ] as const) {
        worker.on("failed", (job, error) =>
          logger.error({ err: error, jobId: job?.id, attemptsMade: job?.attemptsMade }, `${kind} job failed`),
        );
        worker.on("error", (error) => logger.error({ err: error }, `${kind} worker error`));
        void worker.run().catch((error: unknown) => logger.error({ err: error }, `${kind} worker stopped`));
      }
      await Promise.all([eventWorker.waitUntilReady(), cronWorker.waitUntilReady(), maintenance.start()]);
      health = await startHealthServer(
        config.WORKER_HEALTH_PORT,
        () => (eventWorker?.isRunning() ?? false) && (cronWorker?.isRunning() ?? false),
        metrics.registry,
      );
      logger.info({ concurrency: config.WORKER_PREPARED_JOBS, healthPort: health.port }, "worker started");
    },
    async stop() {
      // BullMQ's close() stops fetching and waits for active jobs: deliveries in flight finish.
      await Promise.all([eventWorker?.close(), cronWorker?.close(), maintenance.stop()]);
      await new Promise<void>((resolve) => (health ? health.server.close(() => resolve()) : resolve()));
      sender.close();
    },
  };
}

export interface RunningWorker {
  /** Stops the worker, then closes its database and Redis connections. */
  stop(): Promise<void>;
}

/** A worker process's worker: its own database pool and Redis connection, started. */
export async function startWorker(
  config: Config,
  logger: Logger = createLogger(config, "worker"),
): Promise<RunningWorker> {
  const db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  const redis = createRedis(config.REDIS_URL);
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  const worker = createWorker({ config, db, redis, clock: systemClock, logger });
  await worker.start();
  return {
    async stop() {
      await worker.stop();
      await Promise.allSettled([db.$disconnect(), redis.quit()]);
    },
  };
}
