import {
  CRON_QUEUE_SETTINGS,
  type CronJobData,
  createCronJob,
  createCronJobSchedulers,
  firingOfSchedulerJob,
  firingsBetween,
  QUEUE_NAMES,
  scheduleOf,
} from "@punctual/core";
import { createDb } from "@punctual/db";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import type pg from "pg";
import { type NodeProcess, sleep } from "./processes.ts";
import type { Receiver } from "./receiver.ts";
import { type DeliveryStats, deliveryStats, quantile } from "./stats.ts";

// A cron job firing every second (six fields, `* * * * * *`) for a while on one worker: each run's
// lateness at the receiver, and what its history costs, in Postgres (its run rows) and in Redis
// (the keys of the cron queue: its scheduler, its next firing, the finished jobs BullMQ keeps).
// The job is created as the API creates it (core createCronJob, then the job scheduler).

export const CRON_BENCH_EXPRESSION = "* * * * * *";

/** Firings this close to the end of the measurement are not counted: the scheduler is taken off then. */
const END_MARGIN_MS = 1_500;
/** How often run rows are read during the measurement (ids to scheduled times, before any trim). */
const POLL_MS = 5_000;

export interface CronRedisFootprint {
  /** Keys under the cron queue's prefix, and their bytes (`MEMORY USAGE`). */
  keys: number;
  bytes: number;
  /** Finished jobs BullMQ keeps (completed and failed sets). */
  finishedJobs: number;
  /** `used_memory` of the whole server (shared: other work on it counts too). */
  usedMemory: number;
}

export interface CronResult {
  seconds: number;
  expression: string;
  /** Firings in the measured span (the schedule's own, `firingsBetween`). */
  firings: number;
  /** Lateness: first arrival at the receiver − the run's scheduledFor; lost counts firings without a run or arrival. */
  delivery: DeliveryStats;
  /**
   * BullMQ's hand-over: when the worker took each firing's job (`processedOn`) − the time the job was
   * due (a lead before its firing, so not part of the lateness), ms, from the finished jobs BullMQ keeps.
   */
  handOver: { n: number; p50: number; p99: number; max: number };
  /** The job's run rows at the end. */
  runRows: number;
  /** The most run rows seen during the measurement. */
  runRowsMax: number;
  /** The history a job keeps (CRON_RUNS_KEPT_PER_JOB), when the configuration has one. */
  runsKeptPerJob: number | undefined;
  redis: { before: CronRedisFootprint; after: CronRedisFootprint; maxKeys: number };
  /** CPU ms of the worker per firing. */
  cpuMsPerFiring: number;
}

export interface CronBenchDeps {
  db: pg.ClientBase;
  databaseUrl: string;
  redis: Redis;
  prefix: string;
  orgId: string;
  receiver: Receiver;
  /** A worker process of its own, started with the benchmark's settings. */
  startWorker(): Promise<NodeProcess>;
  cpuMs(pid: number): number;
  runsKeptPerJob: number | undefined;
  log(message: string): void;
}

async function footprint(redis: Redis, prefix: string): Promise<CronRedisFootprint> {
  const pattern = `${prefix}:${QUEUE_NAMES.cron}:*`;
  let cursor = "0";
  let keys = 0;
  let bytes = 0;
  do {
    const [next, found] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1_000);
    cursor = next;
    keys += found.length;
    const sizes = await Promise.all(found.map((key) => redis.memory("USAGE", key, "SAMPLES", "0")));
    bytes += sizes.reduce<number>((sum, size) => sum + Number(size ?? 0), 0);
  } while (cursor !== "0");
  const base = `${prefix}:${QUEUE_NAMES.cron}`;
  const [completed, failed] = await Promise.all([redis.zcard(`${base}:completed`), redis.zcard(`${base}:failed`)]);
  const usedMemory = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1] ?? Number.NaN);
  return { keys, bytes, finishedJobs: completed + failed, usedMemory };
}

/** Creates the job, lets it fire for `seconds`, then disables it and takes its scheduler off. */
export async function measureCronEverySecond(deps: CronBenchDeps, seconds: number): Promise<CronResult> {
  const { db, redis, prefix, receiver, log } = deps;
  const prisma = createDb(deps.databaseUrl, { poolSize: 2 });
  const queue = new Queue<CronJobData>(QUEUE_NAMES.cron, { connection: redis, prefix, settings: CRON_QUEUE_SETTINGS });
  const schedulers = createCronJobSchedulers(queue);
  const worker = await deps.startWorker();
  try {
    const deadline = Date.now() + 30_000;
    while ((await queue.getWorkersCount()) === 0) {
      if (Date.now() > deadline) throw new Error("the cron worker did not connect within 30 s");
      await sleep(100);
    }
    await receiver.reset();
    log(`cron: a job firing every second (${CRON_BENCH_EXPRESSION}) for ${seconds} s on one worker`);
    const job = await createCronJob(
      prisma,
      {
        orgId: deps.orgId,
        expression: CRON_BENCH_EXPRESSION,
        timezone: "UTC",
        destination: receiver.url,
        payload: '{"bench":"cron"}',
      },
      new Date(),
      1_000_000,
    );
    const schedule = scheduleOf(job);
    const before = await footprint(redis, prefix);
    const cpuBefore = deps.cpuMs(worker.pid);
    const from = Date.now();
    await schedulers.schedule(job.id, schedule);

    // Run ids to their scheduled times, read as they are made (a bounded history deletes the oldest).
    const scheduledFor = new Map<string, number>();
    let runRowsMax = 0;
    let maxKeys = before.keys;
    const readRuns = async () => {
      const { rows } = await db.query<{ id: string; scheduled_for: Date }>(
        "SELECT id, scheduled_for FROM cron_runs WHERE cron_job_id = $1",
        [job.id],
      );
      for (const row of rows) scheduledFor.set(row.id, row.scheduled_for.getTime());
      runRowsMax = Math.max(runRowsMax, rows.length);
    };
    const until = from + seconds * 1_000;
    while (Date.now() < until) {
      await sleep(Math.min(POLL_MS, until - Date.now()));
      await readRuns();
      maxKeys = Math.max(maxKeys, (await footprint(redis, prefix)).keys);
    }
    const to = Date.now();
    // Disabled first, so that no repair puts its scheduler back.
    await db.query("UPDATE cron_jobs SET status = 'Disabled', updated_at = now() WHERE id = $1", [job.id]);
    await schedulers.unschedule(job.id);
    const cpuMsPerFiring = (deps.cpuMs(worker.pid) - cpuBefore) / seconds;
    await sleep(2_000);
    await readRuns();
    const after = await footprint(redis, prefix);

    // The firings of the span: each one's run must have arrived once.
    const { rows: counted } = await db.query<{ n: string }>(
      "SELECT count(*) AS n FROM cron_runs WHERE cron_job_id = $1",
      [job.id],
    );
    const expected = new Set(firingsBetween(schedule, from, to - END_MARGIN_MS, Number.MAX_SAFE_INTEGER));
    const dueById = new Map<string, number>();
    for (const [id, at] of scheduledFor) if (expected.has(at)) dueById.set(id, at);
    const arrivals = (await receiver.arrivals()).filter(([id]) => dueById.has(id) || !scheduledFor.has(id));
    const stats = deliveryStats(dueById, arrivals);
    // Each firing's job is due a lead before the firing (schedule.ts): the hand-over is measured from then.
    const handOvers = (await queue.getCompleted(0, 10_000))
      .map((done) => {
        const opts = done.opts as { prevMillis?: number; repeat?: { pattern?: string } };
        const due = opts.prevMillis;
        const firing = due === undefined ? undefined : firingOfSchedulerJob(due, opts.repeat ?? {});
        return { firing, due, taken: done.processedOn };
      })
      .filter(({ firing, taken }) => firing !== undefined && expected.has(firing) && taken !== undefined)
      .map(({ due, taken }) => (taken as number) - (due as number))
      .sort((a, b) => a - b);
    // A firing without a run is lost too.
    const delivery = { ...stats, n: expected.size, lost: stats.lost + (expected.size - dueById.size) };
    return {
      seconds,
      expression: CRON_BENCH_EXPRESSION,
      firings: expected.size,
      delivery,
      handOver: {
        n: handOvers.length,
        p50: quantile(handOvers, 0.5),
        p99: quantile(handOvers, 0.99),
        max: handOvers.at(-1) ?? Number.NaN,
      },
      runRows: Number(counted[0]?.n ?? 0),
      runRowsMax,
      runsKeptPerJob: deps.runsKeptPerJob,
      redis: { before, after, maxKeys: Math.max(maxKeys, after.keys) },
      cpuMsPerFiring,
    };
  } finally {
    await worker.stop();
    await queue.close();
    await prisma.$disconnect();
  }
}
