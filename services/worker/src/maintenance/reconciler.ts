import {
  type Clock,
  type Config,
  type CronJobData,
  type CronScheduler,
  cronRunRedriveJobId,
  cronSchedulerId,
  type EventScheduler,
  eventJobId,
  failUnqueuedEvents,
  type Logger,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job, Queue } from "bullmq";

// Postgres is the truth, Redis only timing (contract §6). The reconciler compares the two every few
// seconds and repairs Redis: it never changes what was delivered, only what will run.

export interface ReconcilerDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "RECONCILE_INTERVAL_MS" | "RECONCILE_BATCH_SIZE" | "QUEUE_GRACE_MS" | "CLAIM_LEAD_MS">;
  eventQueue: Queue;
  cronQueue: Queue<CronJobData>;
  eventScheduler: EventScheduler;
  cronScheduler: CronScheduler;
  logger: Logger;
}

export interface ReconcileReport {
  eventsQueued: number;
  eventsRedriven: number;
  eventsFailedToQueue: number;
  schedulersRestored: number;
  schedulersRemoved: number;
  cronRunsRedriven: number;
}

/** A job that will still run: waiting, delayed or active. A finished or missing one will not. */
const isLive = (job: Job | undefined): boolean => job !== undefined && !job.finishedOn;

/**
 * Looks up the jobs of many ids at once. ioredis sends the commands without waiting for each answer,
 * so a batch costs about one round trip.
 */
async function jobsById(queue: Queue, ids: string[]): Promise<Map<string, Job | undefined>> {
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  return new Map(ids.map((id, n) => [id, jobs[n]]));
}

export function createReconciler(deps: ReconcilerDeps) {
  const { db, clock, config, eventQueue, cronQueue, eventScheduler, cronScheduler, logger } = deps;

  /** Pending events overdue beyond the grace become Failed To Queue (they would be delivered too late). */
  async function failOverdue(now: Date): Promise<number> {
    const overdueBefore = new Date(now.getTime() - config.QUEUE_GRACE_MS);
    const rows = await db.$queryRaw<{ id: string }[]>`
      SELECT id FROM events WHERE status = 'Pending' AND scheduled_time < ${overdueBefore}
      ORDER BY scheduled_time LIMIT ${config.RECONCILE_BATCH_SIZE}`;
    const failed = await failUnqueuedEvents(
      db,
      rows.map((row) => row.id),
      overdueBefore,
      now,
    );
    if (failed.length > 0) await Promise.allSettled(failed.map((id) => eventScheduler.unschedule(id)));
    return failed.length;
  }

  /**
   * Pending events due before the next two runs whose job is missing or finished are queued again.
   * Events further out are looked at when they come within this horizon, which is still in time;
   * the scan is on the (status, scheduled_time) index and cheap when nothing is wrong.
   */
  async function queueMissingPending(now: Date): Promise<number> {
    const horizon = new Date(now.getTime() + 2 * config.RECONCILE_INTERVAL_MS + config.CLAIM_LEAD_MS);
    const rows = await db.$queryRaw<{ id: string; scheduled_time: Date }[]>`
      SELECT id, scheduled_time FROM events WHERE status = 'Pending' AND scheduled_time <= ${horizon}
      ORDER BY scheduled_time LIMIT ${config.RECONCILE_BATCH_SIZE}`;
    const jobs = await jobsById(
      eventQueue,
      rows.map((row) => eventJobId(row.id)),
    );
    let queued = 0;
    for (const row of rows) {
      if (isLive(jobs.get(eventJobId(row.id)))) continue;
      await eventScheduler.schedule({ id: row.id, scheduledTime: row.scheduled_time }, { replace: true });
      queued++;
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
    const jobs = await jobsById(
      eventQueue,
      rows.map((row) => eventJobId(row.id)),
    );
    let redriven = 0;
    for (const row of rows) {
      if (isLive(jobs.get(eventJobId(row.id)))) continue;
      await eventScheduler.schedule({ id: row.id, scheduledTime: row.scheduled_time }, { replace: true });
      redriven++;
    }
    return redriven;
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
      if (wanted.has(id) || !id.startsWith("cron-")) continue;
      await cronScheduler.unschedule(id.slice("cron-".length));
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
    let redriven = 0;
    for (const row of rows) {
      const firingId = `repeat:${cronSchedulerId(row.cron_job_id)}:${row.scheduled_for.getTime()}`;
      const redriveId = cronRunRedriveJobId(row.id);
      const jobs = await jobsById(cronQueue, [firingId, redriveId]);
      if (isLive(jobs.get(firingId)) || isLive(jobs.get(redriveId))) continue;
      if (jobs.get(redriveId)) await cronQueue.remove(redriveId);
      await cronQueue.add(
        "cron-run",
        { cronJobId: row.cron_job_id, scheduledFor: row.scheduled_for.getTime() },
        { jobId: redriveId, attempts: 8, backoff: { type: "exponential", delay: 1_000 } },
      );
      redriven++;
    }
    return redriven;
  }

  /** Runs one part; a failing part is logged and counted as nothing, and the others still run. */
  async function part<T>(name: string, work: () => Promise<T>, nothing: T): Promise<T> {
    try {
      return await work();
    } catch (error) {
      logger.error({ err: error }, `reconciler could not ${name}`);
      return nothing;
    }
  }

  /** One pass over everything. */
  return async function reconcile(): Promise<ReconcileReport> {
    const now = clock.now();
    const eventsFailedToQueue = await part("fail overdue events", () => failOverdue(now), 0);
    const eventsQueued = await part("queue missing events", () => queueMissingPending(now), 0);
    const eventsRedriven = await part("re-drive queued events", redriveQueued, 0);
    const schedulers = await part("sync cron schedulers", syncCronSchedulers, { restored: 0, removed: 0 });
    const cronRunsRedriven = await part("re-drive cron runs", () => redriveCronRuns(now), 0);
    const report: ReconcileReport = {
      eventsFailedToQueue,
      eventsQueued,
      eventsRedriven,
      schedulersRestored: schedulers.restored,
      schedulersRemoved: schedulers.removed,
      cronRunsRedriven,
    };
    if (Object.values(report).some((count) => count > 0)) logger.info(report, "reconciler repaired the queues");
    return report;
  };
}
