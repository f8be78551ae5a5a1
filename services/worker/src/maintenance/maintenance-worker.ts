import { randomUUID } from "node:crypto";
import { type Config, type Logger, QUEUE_NAMES, type Redis } from "@punctual/core";
import { type Job, Queue, Worker } from "bullmq";
import { type Bookkeeping, noBookkeeping } from "../delivery/bookkeeping.ts";

/** A maintenance task: runs as one BullMQ job scheduler, one instance at a time across workers. */
export interface MaintenanceTask {
  name: string;
  everyMs: number;
  /**
   * The longest a run may take. The task's lock lives this long (plus a margin): a worker killed
   * mid-run blocks the task no longer than that.
   */
  maxRunMs: number;
  /**
   * One run. `pause` resolves at the next lull in the worker's deliveries (bounded for the whole
   * run): a long task calls it between its steps.
   */
  run(pause: () => Promise<void>): Promise<unknown>;
}

export interface MaintenanceWorker {
  start(): Promise<void>;
  stop(): Promise<void>;
}

const LOCK_MARGIN_MS = 30_000;

/** Releases a lock only if it is still ours (it may have expired and been taken by another run). */
const RELEASE_LOCK = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

/**
 * Runs the maintenance tasks (reconciler, and later retention and notices) on the maintenance
 * queue. Every worker process registers the same job schedulers (an idempotent upsert) and takes
 * part, but a Redis lock per task lets only one run of a task happen at a time anywhere.
 */
export function createMaintenanceWorker(
  config: Pick<Config, "QUEUE_PREFIX">,
  redis: Redis,
  tasks: MaintenanceTask[],
  logger: Logger,
  /** Runs and their steps wait for lulls in this worker's deliveries (bookkeeping.ts). */
  bookkeeping: Pick<Bookkeeping, "maintenanceRun"> = noBookkeeping,
): MaintenanceWorker {
  const byName = new Map(tasks.map((task) => [task.name, task]));
  const queue = new Queue(QUEUE_NAMES.maintenance, { connection: redis, prefix: config.QUEUE_PREFIX });
  let worker: Worker | undefined;
  let watch: NodeJS.Timeout | undefined;

  async function registerSchedulers(): Promise<void> {
    const existing = new Set((await queue.getJobSchedulers(0, -1)).map((scheduler) => scheduler.id ?? scheduler.key));
    for (const task of tasks) {
      if (existing.has(task.name)) continue;
      await queue.upsertJobScheduler(
        task.name,
        { every: task.everyMs },
        { name: task.name, opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } } },
      );
    }
    // Schedulers of tasks that no longer exist would otherwise fire forever.
    for (const id of existing) if (!byName.has(id)) await queue.removeJobScheduler(id);
  }

  async function runExclusively(job: Job): Promise<unknown> {
    const task = byName.get(job.name);
    if (!task) return { skipped: `unknown task ${job.name}` };
    const pause = bookkeeping.maintenanceRun();
    await pause();
    const lock = `${config.QUEUE_PREFIX}:maintenance-lock:${task.name}`;
    const token = randomUUID();
    // The lock outlives a slow run by a margin; it is released as soon as the run ends.
    const acquired = await redis.set(lock, token, "PX", task.maxRunMs + LOCK_MARGIN_MS, "NX");
    if (acquired !== "OK") return { skipped: "another run is in progress" };
    try {
      return await task.run(pause);
    } finally {
      await redis.eval(RELEASE_LOCK, 1, lock, token);
    }
  }

  return {
    async start() {
      await registerSchedulers();
      // The schedulers live in Redis: if Redis loses them (a flush, a restart without persistence),
      // the reconciler that would repair everything else would never run again. Every worker puts
      // them back.
      const checkEveryMs = Math.min(10_000, ...tasks.map((task) => task.everyMs));
      watch = setInterval(() => {
        registerSchedulers().catch((error: unknown) =>
          logger.warn({ err: error }, "could not check the maintenance schedulers"),
        );
      }, checkEveryMs);
      watch.unref();
      worker = new Worker(QUEUE_NAMES.maintenance, runExclusively, {
        connection: redis,
        prefix: config.QUEUE_PREFIX,
        concurrency: 1,
      });
      worker.on("failed", (job, error) => logger.error({ err: error, task: job?.name }, "maintenance task failed"));
      worker.on("error", (error) => logger.error({ err: error }, "maintenance worker error"));
      await worker.waitUntilReady();
    },
    async stop() {
      clearInterval(watch);
      await worker?.close();
      await queue.close();
    },
  };
}
