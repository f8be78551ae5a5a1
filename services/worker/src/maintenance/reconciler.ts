import {
  type Clock,
  type Config,
  type CronJobData,
  type CronJobSchedulers,
  type EventQueue,
  eventJobId,
  eventShardOf,
  failUnqueuedEvents,
  type Logger,
  type Redis,
  recordReconcilerRun,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Queue } from "bullmq";
import { createCronRepairs } from "./cron-repairs.ts";
import { createHorizonFeeder, FEEDER_CLOCK_SLACK_MS } from "./horizon-feeder.ts";
import { type JobState, jobStates } from "./job-states.ts";

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
    | "CRON_MISSED_AFTER_MS"
    | "CRON_RUNS_KEPT_PER_JOB"
  >;
  /** The event queue, or every shard's in shard order (QUEUE_SHARDS). */
  eventQueues: Queue | readonly Queue[];
  cronQueue: Queue<CronJobData>;
  /** Queues events' jobs (the API's too). */
  eventQueue: EventQueue;
  cronJobSchedulers: CronJobSchedulers;
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
  /** Runs made for cron firings a lost scheduler did not bring (catchUp latest or all). */
  cronRunsCaughtUp: number;
  /** Cron jobs that became Completed here: their window ended while nothing fired. */
  cronJobsCompleted: number;
  cronRunsRedriven: number;
}

/**
 * How far ahead lost Pending events are put back: PREPARE_AHEAD_MS plus several reconcile intervals
 * and MIN_HORIZON_MS, so that a large burst is re-added before workers would take its jobs; never
 * beyond the feeder's reach (ENQUEUE_HORIZON_MS), where no job is the normal state.
 */
const HORIZON_INTERVALS = 3;
const MIN_HORIZON_MS = 10_000;
/** Pages of RECONCILE_BATCH_SIZE looked at per run within the horizon. */
const MAX_PAGES = 20;

export function createReconciler(deps: ReconcilerDeps) {
  const { db, clock, config, eventQueue, logger, redis } = deps;
  const cron = createCronRepairs(deps);
  const eventQueues: readonly Queue[] = Array.isArray(deps.eventQueues) ? deps.eventQueues : [deps.eventQueues];
  const queueOf = (eventId: string) => eventQueues[eventShardOf(eventId, eventQueues.length)] as Queue;

  /** The states of events' jobs, one round trip per shard (on a cluster a pipeline stays in one slot). */
  async function eventJobStates(eventIds: string[]): Promise<Map<string, JobState>> {
    const byQueue = new Map<Queue, string[]>();
    for (const id of eventIds) byQueue.set(queueOf(id), [...(byQueue.get(queueOf(id)) ?? []), eventJobId(id)]);
    const states = await Promise.all([...byQueue].map(([queue, jobIds]) => jobStates(redis, queue, jobIds)));
    return new Map(states.flatMap((state) => [...state]));
  }
  const feed = createHorizonFeeder({ db, clock, config, eventQueue, redis });

  /** Gives every event whose job is missing or finished a new job; returns how many. */
  async function requeue(events: { id: string; scheduled_time: Date }[]): Promise<number> {
    const states = await eventJobStates(events.map((event) => event.id));
    const lost = events.filter((event) => states.get(eventJobId(event.id)) !== "live");
    // A finished job keeps its id: it must go before the id can be used again.
    const finished = lost.filter((event) => states.get(eventJobId(event.id)) === "finished");
    await Promise.all(finished.map((event) => queueOf(event.id).remove(eventJobId(event.id))));
    await eventQueue.scheduleMany(lost.map((event) => ({ id: event.id, scheduledTime: event.scheduled_time })));
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
    if (failed.length > 0) await Promise.allSettled(failed.map((id) => eventQueue.unschedule(id)));
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

  /** One pass over everything; `pause` (between parts and pages) waits for a lull in the deliveries. */
  return async function reconcile(lull: () => Promise<void> = () => Promise.resolve()): Promise<ReconcileReport> {
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
    // One time for the whole pass; later pauses leave it at most BOOKKEEPING_MAX_WAIT_MS (bookkeeping.ts) behind.
    const now = clock.now();
    const eventsFailedToQueue = await part("fail overdue events", () => failOverdue(now), 0);
    const eventsFed = await part("queue events entering the horizon", () => feed(now), 0);
    const eventsQueued = await part("queue missing events", () => queueMissingPending(now, pause), 0);
    const eventsRedriven = await part("re-drive queued events", redriveQueued, 0);
    const schedulers = await part("sync cron schedulers", () => cron.syncSchedulers(now), {
      restored: 0,
      removed: 0,
      caughtUp: 0,
      completed: 0,
    });
    const cronRunsRedriven = await part("re-drive cron runs", () => cron.redriveRuns(now), 0);
    const report: ReconcileReport = {
      eventsFed,
      eventsFailedToQueue,
      eventsQueued,
      eventsRedriven,
      schedulersRestored: schedulers.restored,
      schedulersRemoved: schedulers.removed,
      cronRunsCaughtUp: schedulers.caughtUp,
      cronJobsCompleted: schedulers.completed,
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
