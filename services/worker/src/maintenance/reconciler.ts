import {
  type Clock,
  type Config,
  CRON_RUN_JOB,
  type CronJobData,
  type CronJobSchedulers,
  cronJobIdOfScheduler,
  cronRunRedriveJobId,
  cronSchedulerId,
  type EventQueue,
  eventJobId,
  eventShardOf,
  failUnqueuedEvents,
  INFRASTRUCTURE_RETRIES,
  type Logger,
  type Redis,
  recordReconcilerRun,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Queue } from "bullmq";
import { noPause } from "./delivery-lull.ts";
import { createHorizonFeeder, FEEDER_CLOCK_SLACK_MS } from "./horizon-feeder.ts";

// Postgres is the truth, Redis only timing (contract §6). The reconciler compares the two every few
// seconds and repairs Redis: it never changes what was delivered, only what will run. It also queues
// the Pending events that come within ENQUEUE_HORIZON_MS (the feeder): under the same lock, before
// the missing-job check, so that after a flush the check finds the fed jobs back instead of adding
// them a second time, and one run at a time walks the events.

export interface ReconcilerDeps {
  db: Db;
  clock: Clock;
  config: Pick<
    Config,
    | "RECONCILE_INTERVAL_MS"
    | "RECONCILE_BATCH_SIZE"
    | "QUEUE_GRACE_MS"
    | "PREPARE_AHEAD_MS"
    | "ENQUEUE_HORIZON_MS"
    | "QUEUE_PREFIX"
  >;
  /** The event queue, or every shard's in shard order (QUEUE_SHARDS). */
  eventQueue: Queue | readonly Queue[];
  cronQueue: Queue<CronJobData>;
  eventScheduler: EventQueue;
  cronScheduler: CronJobSchedulers;
  logger: Logger;
  /** The connection the queues use, for pipelined look-ups of many jobs at once. */
  redis: Redis;
}

export interface ReconcileReport {
  /** Pending events queued as they came within ENQUEUE_HORIZON_MS (the normal course, no repair). */
  eventsFed: number;
  /** Pending events whose job was missing or finished, queued again. */
  eventsQueued: number;
  eventsRedriven: number;
  eventsFailedToQueue: number;
  schedulersRestored: number;
  schedulersRemoved: number;
  cronRunsRedriven: number;
}

type JobState = "live" | "finished" | "missing";

/**
 * How far ahead lost Pending events are put back: PREPARE_AHEAD_MS plus several reconcile intervals
 * and MIN_HORIZON_MS, so that a large burst is re-added before workers would take its jobs; never
 * beyond the feeder's reach (ENQUEUE_HORIZON_MS), where no job is the normal state.
 */
const HORIZON_INTERVALS = 3;
const MIN_HORIZON_MS = 10_000;
/** Pages of RECONCILE_BATCH_SIZE looked at per run within the horizon. */
const MAX_PAGES = 20;

/**
 * The state of many jobs in one pipelined round trip: live (waiting, delayed or active, so it will
 * run), finished (completed or failed: it will not run again) or missing (Redis lost it).
 */
async function jobStates(redis: Redis, queue: Queue, jobIds: string[]): Promise<Map<string, JobState>> {
  const pipeline = redis.pipeline();
  for (const id of jobIds) pipeline.hmget(queue.toKey(id), "timestamp", "finishedOn");
  const replies = (await pipeline.exec()) ?? [];
  return new Map(
    jobIds.map((id, n) => {
      const [error, fields] = replies[n] ?? [null, null];
      if (error) throw error;
      const [timestamp, finishedOn] = (fields as (string | null)[] | null) ?? [null, null];
      const state: JobState = timestamp === null ? "missing" : finishedOn === null ? "live" : "finished";
      return [id, state];
    }),
  );
}

export function createReconciler(deps: ReconcilerDeps) {
  const { db, clock, config, eventQueue, cronQueue, eventScheduler, cronScheduler, logger, redis } = deps;
  const eventQueues: readonly Queue[] = Array.isArray(eventQueue) ? eventQueue : [eventQueue];
  const queueOf = (eventId: string) => eventQueues[eventShardOf(eventId, eventQueues.length)] as Queue;

  /** The states of events' jobs, one round trip per shard (on a cluster a pipeline stays in one slot). */
  async function eventJobStates(eventIds: string[]): Promise<Map<string, JobState>> {
    const byQueue = new Map<Queue, string[]>();
    for (const id of eventIds) byQueue.set(queueOf(id), [...(byQueue.get(queueOf(id)) ?? []), eventJobId(id)]);
    const states = await Promise.all([...byQueue].map(([queue, jobIds]) => jobStates(redis, queue, jobIds)));
    return new Map(states.flatMap((state) => [...state]));
  }
  const feed = createHorizonFeeder({ db, clock, config, eventScheduler, redis });

  /** Gives every event whose job is missing or finished a new job; returns how many. */
  async function requeue(events: { id: string; scheduled_time: Date }[]): Promise<number> {
    const states = await eventJobStates(events.map((event) => event.id));
    const lost = events.filter((event) => states.get(eventJobId(event.id)) !== "live");
    // A finished job keeps its id: it must go before the id can be used again.
    const finished = lost.filter((event) => states.get(eventJobId(event.id)) === "finished");
    await Promise.all(finished.map((event) => queueOf(event.id).remove(eventJobId(event.id))));
    await eventScheduler.scheduleMany(lost.map((event) => ({ id: event.id, scheduledTime: event.scheduled_time })));
    return lost.length;
  }

  /** Pending events overdue beyond the grace become Failed To Queue (they would be delivered too late). */
  async function failOverdue(now: Date): Promise<number> {
    const overdueBefore = new Date(now.getTime() - config.QUEUE_GRACE_MS);
    const rows = await db.$queryRaw<{ id: string; org_id: string }[]>`
      SELECT id, org_id FROM events WHERE status = 'Pending' AND scheduled_time < ${overdueBefore}
      ORDER BY scheduled_time LIMIT ${config.RECONCILE_BATCH_SIZE}`;
    const failed = await failUnqueuedEvents(
      db,
      rows.map((row) => row.id),
      overdueBefore,
      now,
    );
    const orgOf = new Map(rows.map((row) => [row.id, row.org_id]));
    for (const id of failed) {
      // The event's final outcome, in the same shape as a delivery's (no attempt was made).
      logger.info(
        {
          eventId: id,
          orgId: orgOf.get(id),
          attempts: 0,
          firstAttemptLatenessMs: null,
          responseStatus: null,
          error: `not queued within QUEUE_GRACE_MS (${config.QUEUE_GRACE_MS} ms) of its scheduled time`,
        },
        "event failed to queue",
      );
    }
    if (failed.length > 0) await Promise.allSettled(failed.map((id) => eventScheduler.unschedule(id)));
    return failed.length;
  }

  /**
   * Pending events due within the horizon whose job is missing or finished are queued again. Events
   * further out are looked at when they come within it, which is still in time; the scan is on the
   * (status, scheduled_time) index and one pipelined look-up, cheap when nothing is wrong.
   */
  async function queueMissingPending(now: Date, pause: () => Promise<void>): Promise<number> {
    // Beyond the prepare window too: a lost job is back before a worker would have taken it.
    const aheadMs = Math.min(
      config.PREPARE_AHEAD_MS + HORIZON_INTERVALS * config.RECONCILE_INTERVAL_MS + MIN_HORIZON_MS,
      config.ENQUEUE_HORIZON_MS - FEEDER_CLOCK_SLACK_MS,
    );
    const horizon = new Date(now.getTime() + aheadMs);
    let queued = 0;
    let after = new Date(0);
    let afterId = "";
    // Page through the horizon: a burst of due events may be larger than one batch.
    for (let page = 0; page < MAX_PAGES; page++) {
      if (page > 0) await pause();
      const rows = await db.$queryRaw<{ id: string; scheduled_time: Date }[]>`
        SELECT id, scheduled_time FROM events
        WHERE status = 'Pending' AND scheduled_time <= ${horizon} AND (scheduled_time, id) > (${after}, ${afterId})
        ORDER BY scheduled_time, id LIMIT ${config.RECONCILE_BATCH_SIZE}`;
      queued += await requeue(rows);
      const last = rows.at(-1);
      if (!last || rows.length < config.RECONCILE_BATCH_SIZE) break;
      after = last.scheduled_time;
      afterId = last.id;
    }
    return queued;
  }

  /**
   * Queued events are being delivered; one whose job is gone (Redis lost it) or finished (its worker
   * gave up on an infrastructure error) gets a new job, which resumes the delivery.
   */
  async function redriveQueued(): Promise<number> {
    const rows = await db.$queryRaw<{ id: string; scheduled_time: Date }[]>`
      SELECT id, scheduled_time FROM events WHERE status = 'Queued'
      ORDER BY scheduled_time LIMIT ${config.RECONCILE_BATCH_SIZE}`;
    return requeue(rows);
  }

  /** Every Active cron job has its job scheduler, and no other cron job has one. */
  async function syncCronSchedulers(): Promise<{ restored: number; removed: number }> {
    // Schedulers first, then jobs: a job created in between is then at worst scheduled twice
    // (an upsert), never unscheduled for being missing from a stale list.
    const existing = new Set(
      (await cronQueue.getJobSchedulers(0, -1)).map((scheduler) => scheduler.id ?? scheduler.key),
    );
    const active = await db.cronJob.findMany({
      where: { status: "Active" },
      select: { id: true, expression: true, timezone: true },
    });
    let restored = 0;
    for (const job of active) {
      if (existing.has(cronSchedulerId(job.id))) continue;
      await cronScheduler.schedule(job);
      restored++;
    }
    const wanted = new Set(active.map((job) => cronSchedulerId(job.id)));
    let removed = 0;
    for (const id of existing) {
      const cronJobId = cronJobIdOfScheduler(id);
      if (wanted.has(id) || cronJobId === undefined) continue;
      await cronScheduler.unschedule(cronJobId);
      removed++;
    }
    return { restored, removed };
  }

  /** Queued cron runs whose firing job is gone get a job of their own that resumes them. */
  async function redriveCronRuns(now: Date): Promise<number> {
    // A run is created by its running job; give that job a moment before judging it lost.
    const settled = new Date(now.getTime() - config.RECONCILE_INTERVAL_MS);
    const rows = await db.$queryRaw<{ id: string; cron_job_id: string; scheduled_for: Date }[]>`
      SELECT id, cron_job_id, scheduled_for FROM cron_runs WHERE status = 'Queued' AND created_at < ${settled}
      ORDER BY created_at LIMIT ${config.RECONCILE_BATCH_SIZE}`;
    const runs = rows.map((row) => ({
      ...row,
      firingId: `repeat:${cronSchedulerId(row.cron_job_id)}:${row.scheduled_for.getTime()}`,
      redriveId: cronRunRedriveJobId(row.id),
    }));
    // Every run's two jobs in one round trip.
    const states = await jobStates(
      redis,
      cronQueue,
      runs.flatMap((run) => [run.firingId, run.redriveId]),
    );
    let redriven = 0;
    for (const run of runs) {
      if (states.get(run.firingId) === "live" || states.get(run.redriveId) === "live") continue;
      if (states.get(run.redriveId) === "finished") await cronQueue.remove(run.redriveId);
      await cronQueue.add(
        CRON_RUN_JOB,
        { cronJobId: run.cron_job_id, scheduledFor: run.scheduled_for.getTime() },
        { jobId: run.redriveId, ...INFRASTRUCTURE_RETRIES },
      );
      redriven++;
    }
    return redriven;
  }

  /** One pass over everything; `pause` (between parts and pages) waits for a lull in the deliveries. */
  return async function reconcile(lull: () => Promise<void> = noPause): Promise<ReconcileReport> {
    /** Time spent waiting for lulls, left out of the run's recorded duration. */
    let pausedMs = 0;
    const pause = async () => {
      const from = performance.now();
      await lull();
      pausedMs += performance.now() - from;
    };
    /** Runs one part; a failing part is logged and counted as nothing, and the others still run. */
    async function part<T>(name: string, work: () => Promise<T>, nothing: T): Promise<T> {
      await pause();
      try {
        return await work();
      } catch (error) {
        logger.error({ err: error }, `reconciler could not ${name}`);
        return nothing;
      }
    }

    const started = performance.now();
    await pause();
    // One time for the whole pass; later pauses leave it at most MAX_LULL_WAIT_MS behind.
    const now = clock.now();
    const eventsFailedToQueue = await part("fail overdue events", () => failOverdue(now), 0);
    const eventsFed = await part("queue events entering the horizon", () => feed(now), 0);
    const eventsQueued = await part("queue missing events", () => queueMissingPending(now, pause), 0);
    const eventsRedriven = await part("re-drive queued events", redriveQueued, 0);
    const schedulers = await part("sync cron schedulers", syncCronSchedulers, { restored: 0, removed: 0 });
    const cronRunsRedriven = await part("re-drive cron runs", () => redriveCronRuns(now), 0);
    const report: ReconcileReport = {
      eventsFed,
      eventsFailedToQueue,
      eventsQueued,
      eventsRedriven,
      schedulersRestored: schedulers.restored,
      schedulersRemoved: schedulers.removed,
      cronRunsRedriven,
    };
    const { eventsFed: _fed, ...repairs } = report;
    if (Object.values(repairs).some((count) => count > 0)) logger.info(report, "reconciler repaired the queues");
    else if (eventsFed > 0) logger.debug({ eventsFed }, "reconciler queued the events entering the horizon");
    // For the operator's service health; a lost record changes nothing else.
    const durationMs = Math.round(performance.now() - started - pausedMs);
    await recordReconcilerRun(redis, config.QUEUE_PREFIX, { at: now, durationMs }).catch((error: unknown) =>
      logger.warn({ err: error }, "could not record the reconciler's run"),
    );
    return report;
  };
}
