import type { Server } from "node:http";
import {
  type Clock,
  type Config,
  CRON_QUEUE_SETTINGS,
  type CronJobData,
  consumedShards,
  createAdmissionStore,
  createCronJobSchedulers,
  createLogger,
  createRedis,
  eventChangesChannel,
  type Logger,
  noticeDestinationHealth,
  QUEUE_NAMES,
  type Redis,
  readFlowLimits,
  systemClock,
  workerHeartbeatsLeft,
} from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { Queue, Worker } from "bullmq";
import { createCronRunProcessor } from "./cron-jobs/deliver-cron-run.ts";
import { createBookkeeping } from "./delivery/bookkeeping.ts";
import { createFlowGate } from "./delivery/flow-gate.ts";
import { createDeliveryOwners } from "./delivery/owners.ts";
import { createSender } from "./delivery/sender.ts";
import { warmUp } from "./delivery/warm-up.ts";
import { createEventProcessor } from "./events/deliver-event.ts";
import { createEventJobFeed } from "./events/event-job-feed.ts";
import { startHealthServer } from "./health-server.ts";
import { createHeartbeat } from "./heartbeat.ts";
import { createMaintenance } from "./maintenance/index.ts";
import { createWorkerMetrics } from "./metrics/worker-metrics.ts";
import { createNoticeSender } from "./outcomes/notice-sender.ts";

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
  /**
   * Starts taking jobs and serving /healthz; resolves once both are up. An aborted `signal` ends
   * the warm-up early (a stop asked for during the start).
   */
  start(signal?: AbortSignal): Promise<void>;
  /** Stops taking jobs and waits for the deliveries in flight to finish. */
  stop(): Promise<void>;
  /** The health server's port (useful when configured as 0). */
  readonly healthPort: number | undefined;
}

/** A delivery worker process: consumes the events and cron queues and delivers each event and run. */
export function createWorker(deps: WorkerDeps): DeliveryWorker {
  const { config, logger } = deps;
  // One transport and one fair dispatcher for every attempt of this process (events and cron runs).
  const sender = createSender(config, logger);
  const { transport, dispatcher } = sender;
  const metrics = createWorkerMetrics({
    // Read at scrape time, once the processor below exists.
    preparedJobs: () => eventProcessor.held,
    attemptsWaiting: () => dispatcher.waiting,
    attemptsInFlight: () => dispatcher.inFlight,
    cappedOrigins: () => dispatcher.cappedOrigins,
    heldDeliveries: () => gate.held,
  });
  // Outcome lines, job completions and maintenance wait until the sends are quiet, within one bound
  // (bookkeeping.ts). The event processor, read at each wait, is made below.
  const bookkeeping = createBookkeeping({
    get waiting() {
      return dispatcher.waiting;
    },
    whenIdle: () => dispatcher.whenIdle(),
    nextInstant: () => eventProcessor.nextInstant,
  });
  // Event jobs are taken by the feed (one consumer per event shard, QUEUE_SHARDS and WORKER_SHARDS).
  const feed = createEventJobFeed({
    config,
    redis: deps.redis,
    logger,
    bookkeeping,
  });
  // Lists this process among the live workers (GET /api/admin/service-health), and keeps the events
  // it claimed its own while it beats (owners.ts).
  const heartbeat = createHeartbeat({ redis: deps.redis, prefix: config.QUEUE_PREFIX, clock: deps.clock, logger });
  const owners = createDeliveryOwners({
    self: heartbeat.id,
    clock: deps.clock,
    logger,
    config,
    heartbeatsLeft: (ids) => workerHeartbeatsLeft(deps.redis, config.QUEUE_PREFIX, ids),
  });
  // Flows' limits and origins' health, decided in Redis across every worker, before the dispatcher.
  // Its own connection: at a burst's instant its admissions must not queue behind the job feed's commands.
  const admissionRedis = deps.redis.duplicate();
  admissionRedis.on("error", (error) => logger.warn({ err: error }, "redis connection error (flow gate)"));
  const gate = createFlowGate({
    store: createAdmissionStore(admissionRedis, config.QUEUE_PREFIX),
    readLimits: (flows) => readFlowLimits(deps.db, flows),
    config,
    workerId: heartbeat.id,
    logger,
    metrics: metrics.gate,
    healthChanged: (change) => noticeDestinationHealth(deps.db, change),
  });
  // Callbacks and operational webhooks (the notices' outbox), through the same gate and dispatcher.
  const notices = createNoticeSender({ db: deps.db, clock: deps.clock, config, dispatcher, gate, logger });
  const eventProcessor = createEventProcessor({
    db: deps.db,
    clock: deps.clock,
    config,
    dispatcher,
    gate,
    bookkeeping,
    logger,
    metrics: metrics.event,
    owners,
    jobs: feed,
  });
  let cronWorker: Worker<CronJobData> | undefined;
  /** The cron queue as a producer: caught-up runs' jobs, a buffered run woken, a Completed job's scheduler removed. */
  let cronQueue: Queue<CronJobData> | undefined;
  let changes: Redis | undefined;
  let health: { server: Server; port: number } | undefined;
  // False until the start gets past the warm-up: a stop asked for during the warm-up takes no job.
  let takingJobs = false;
  const maintenance = createMaintenance({ ...deps, bookkeeping, metrics });

  return {
    get healthPort() {
      return health?.port;
    },
    async start(signal) {
      // Before the first job: a burst due right after a start must not wait for V8 to compile.
      const warm = await warmUp({ db: deps.db, config, logger, sender, signal });
      if (signal?.aborted) return;
      takingJobs = true;
      // Subscribed before the first job is taken, so no announced change of a prepared event is missed.
      changes = deps.redis.duplicate();
      changes.on("error", (error) => logger.warn({ err: error }, "redis connection error (event changes)"));
      changes.on("message", (_channel: string, eventId: string) => eventProcessor.changed(eventId));
      await changes.subscribe(eventChangesChannel(config.QUEUE_PREFIX));
      cronQueue = new Queue<CronJobData>(QUEUE_NAMES.cron, {
        connection: deps.redis,
        prefix: config.QUEUE_PREFIX,
        settings: CRON_QUEUE_SETTINGS,
      });
      cronWorker = new Worker<CronJobData>(
        QUEUE_NAMES.cron,
        createCronRunProcessor({
          db: deps.db,
          clock: deps.clock,
          config,
          dispatcher,
          gate,
          bookkeeping,
          logger,
          metrics: metrics.cron,
          owners,
          cronQueue,
          cronJobSchedulers: createCronJobSchedulers(cronQueue),
        }),
        {
          connection: deps.redis,
          prefix: config.QUEUE_PREFIX,
          // Each firing's scheduler computes the next by the job's own schedule (schedule.ts).
          settings: CRON_QUEUE_SETTINGS,
          // BullMQ's "concurrency" is how many jobs it hands over at once: the cron runs a worker holds
          // (waiting or in flight). Requests in flight are bounded by the dispatcher (WORKER_CONCURRENCY).
          concurrency: config.WORKER_PREPARED_JOBS,
          lockDuration: config.JOB_LOCK_MS,
          // A dead worker's jobs are found a third of a lock after their lock ran out, at worst.
          stalledInterval: Math.ceil(config.JOB_LOCK_MS / 3),
          autorun: false,
        },
      );
      cronWorker.on("failed", (job, error) =>
        logger.error({ err: error, jobId: job?.id, attemptsMade: job?.attemptsMade }, "cron job failed"),
      );
      cronWorker.on("error", (error) => logger.error({ err: error }, "cron worker error"));
      void cronWorker.run().catch((error: unknown) => logger.error({ err: error }, "cron worker stopped"));
      // Alive before the first claim: another worker finding one of its events Queued leaves it alone.
      await heartbeat.start();
      await Promise.all([
        feed.start(eventProcessor.take, eventProcessor.lost),
        cronWorker.waitUntilReady(),
        maintenance.start(),
      ]);
      notices.start();
      health = await startHealthServer(
        config.WORKER_HEALTH_PORT,
        config.WORKER_HEALTH_HOST,
        () => feed.isRunning() && (cronWorker?.isRunning() ?? false),
        metrics.registry,
      );
      // The settings by their configuration names, so the line reads against the documentation.
      logger.info(
        {
          WORKER_CONCURRENCY: config.WORKER_CONCURRENCY,
          WORKER_PREPARED_JOBS: config.WORKER_PREPARED_JOBS,
          ORIGIN_CONCURRENCY: config.ORIGIN_CONCURRENCY,
          PREPARE_AHEAD_MS: config.PREPARE_AHEAD_MS,
          CLAIM_LEAD_MS: config.CLAIM_LEAD_MS,
          eventShards: consumedShards(config),
          healthPort: health.port,
          warmUp: { requests: warm.requests, answered: warm.answered, ms: Math.round(warm.durationMs) },
        },
        "worker started: WORKER_CONCURRENCY requests in flight at most, WORKER_PREPARED_JOBS jobs held in memory",
      );
    },
    async stop() {
      if (!takingJobs) {
        // Stopped during the warm-up: nothing was taken, only the transport holds connections.
        admissionRedis.disconnect();
        bookkeeping.close();
        dispatcher.close();
        await transport.close();
        return;
      }
      // No new event jobs; those only waiting (prepared, or between retries) go back to the queue at
      // once, and the rest (deliveries claimed or in flight) finish and are recorded before the feed
      // closes. BullMQ's close() of the cron worker waits for its runs in flight the same way.
      feed.stopTaking();
      // A maintenance run waiting for a lull goes on at once: the maintenance worker's stop waits for it.
      bookkeeping.close();
      const eventsEnded = eventProcessor.stop();
      // Deliveries held back by a flow or an Unhealthy origin are not sent: they go back to the
      // queue, their claims let go (the processor's stop waits for them to end so).
      gate.stop();
      await Promise.all([
        eventsEnded.then(() => feed.close()),
        cronWorker?.close(),
        maintenance.stop(),
        notices.stop(),
      ]);
      await cronQueue?.close();
      // Withdrawn only once its deliveries have ended: while it drains, another worker that finds one
      // of them Queued steps aside for it (delivery/owners.ts) instead of sending it a second time.
      // Cut short by SHUTDOWN_TIMEOUT_MS, the heartbeat expires on its own and they are taken over.
      await heartbeat.stop();
      await changes?.quit().catch(() => undefined);
      await gate.close();
      await admissionRedis.quit().catch(() => undefined);
      await new Promise<void>((resolve) => (health ? health.server.close(() => resolve()) : resolve()));
      dispatcher.close();
      await transport.close();
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
  signal?: AbortSignal,
): Promise<RunningWorker> {
  const db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  const redis = createRedis(config);
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  const worker = createWorker({ config, db, redis, clock: systemClock, logger });
  await worker.start(signal);
  return {
    async stop() {
      await worker.stop();
      await Promise.allSettled([db.$disconnect(), redis.quit()]);
    },
  };
}
