import {
  type Config,
  CRON_RUN_JOB,
  type CronFiringRules,
  type CronJobData,
  type CronJobSchedulers,
  cronJobIdOfScheduler,
  cronRunRedriveJobId,
  cronSchedulerId,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
  type Redis,
  scheduleOf,
  schedulerFiringJobIds,
  schedulerJobIdAt,
  settleCronJobs,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Queue } from "bullmq";
import { jobStates } from "./job-states.ts";

// The reconciler's repairs of cron jobs (reconciler.ts): Postgres says which cron jobs are Active,
// which runs are under way and where each job's firings were last handled; Redis gets the job
// schedulers and the jobs that match.
//
// A scheduler Redis lost (a flush, a failover) is put back, and one whose pending firing is overdue
// by CRON_MISSED_AFTER_MS with its job gone (it stopped making firings) is set again. The firings
// it did not bring are then caught up from Postgres (settleCronJobs: `latest`, `all`; the run
// unique per job and time, and the job's row lock, keep a firing from being delivered twice), and a
// job whose window ended while nothing fired becomes Completed. Nothing here reads what Redis
// remembers of a job's firings: only whether its scheduler is there to bring the next ones.

export interface CronRepairsDeps {
  db: Db;
  config: Pick<
    Config,
    "RECONCILE_INTERVAL_MS" | "RECONCILE_BATCH_SIZE" | "CRON_MISSED_AFTER_MS" | "CRON_RUNS_KEPT_PER_JOB"
  >;
  cronQueue: Queue<CronJobData>;
  cronJobSchedulers: CronJobSchedulers;
  /** The connection the queues use, for pipelined look-ups of many jobs at once. */
  redis: Redis;
}

export interface CronRepairs {
  restored: number;
  removed: number;
  /** Runs made for firings the schedulers did not bring (catch-up). */
  caughtUp: number;
  /** Jobs that became Completed (window ended while nothing fired, or maxRuns reached). */
  completed: number;
}

export function createCronRepairs(deps: CronRepairsDeps) {
  const { db, config, cronQueue, cronJobSchedulers, redis } = deps;
  const rules: CronFiringRules = {
    missedAfterMs: config.CRON_MISSED_AFTER_MS,
    runsKeptPerJob: config.CRON_RUNS_KEPT_PER_JOB,
  };

  /**
   * Every Active cron job has its job scheduler, making firings, and no other cron job has one; the
   * firings a lost scheduler did not bring are caught up, and a job with none left is Completed.
   */
  async function syncSchedulers(now: Date): Promise<CronRepairs> {
    // Schedulers first, then jobs: a job created in between is then at worst scheduled twice
    // (an upsert), never unscheduled for being missing from a stale list.
    const schedulers = await cronQueue.getJobSchedulers(0, -1);
    const existing = new Map(schedulers.map((scheduler) => [scheduler.id ?? scheduler.key, scheduler]));
    const active = await db.cronJob.findMany({
      where: { status: "Active" },
      select: {
        id: true,
        expression: true,
        timezone: true,
        everyMs: true,
        startAt: true,
        endAt: true,
        scheduleSince: true,
        createdAt: true,
      },
    });
    const missing = active.filter((job) => !existing.has(cronSchedulerId(job.id)));
    // A scheduler whose pending firing is overdue with its job gone (finished or lost) makes no more.
    const overdue = active.flatMap((job) => {
      const next = existing.get(cronSchedulerId(job.id))?.next;
      return typeof next === "number" && next < now.getTime() - config.CRON_MISSED_AFTER_MS
        ? [{ job, firingId: schedulerJobIdAt(job.id, next) }]
        : [];
    });
    const firingStates = await jobStates(
      redis,
      cronQueue,
      overdue.map((entry) => entry.firingId),
    );
    const stuck = overdue.filter((entry) => firingStates.get(entry.firingId) !== "live").map((entry) => entry.job);
    const lost = new Set([...missing, ...stuck].map((job) => job.id));

    const settled = await settleCronJobs(db, now, rules, lost);
    if (settled.runs.length > 0) {
      await cronQueue.addBulk(
        settled.runs.map((run) => ({
          name: CRON_RUN_JOB,
          data: { cronJobId: run.cronJobId, scheduledFor: run.scheduledFor.getTime() },
          opts: { jobId: cronRunRedriveJobId(run.id), ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
        })),
      );
    }
    const completed = new Set(settled.completed);

    let restored = 0;
    for (const job of [...missing, ...stuck]) {
      if (completed.has(job.id)) continue;
      const schedule = scheduleOf({
        ...job,
        everyMs: job.everyMs === null ? null : Number(job.everyMs),
        scheduleSince: job.scheduleSince ?? job.createdAt,
      });
      await cronJobSchedulers.schedule(job.id, schedule);
      restored++;
    }
    const wanted = new Set(active.filter((job) => !completed.has(job.id)).map((job) => cronSchedulerId(job.id)));
    let removed = 0;
    for (const id of existing.keys()) {
      const cronJobId = cronJobIdOfScheduler(id);
      if (wanted.has(id) || cronJobId === undefined) continue;
      await cronJobSchedulers.unschedule(cronJobId);
      removed++;
    }
    return { restored, removed, caughtUp: settled.runs.length, completed: completed.size };
  }

  /** Queued cron runs whose firing job is gone get a job of their own that resumes them. */
  async function redriveRuns(now: Date): Promise<number> {
    // A run is created by its running job; give that job a moment before judging it lost.
    const settled = new Date(now.getTime() - config.RECONCILE_INTERVAL_MS);
    const rows = await db.$queryRaw<{ id: string; cron_job_id: string; scheduled_for: Date }[]>`
      SELECT id, cron_job_id, scheduled_for FROM cron_runs WHERE status = 'Queued' AND created_at < ${settled}
      ORDER BY created_at LIMIT ${config.RECONCILE_BATCH_SIZE}`;
    const runs = rows.map((row) => ({
      ...row,
      firingIds: schedulerFiringJobIds(row.cron_job_id, row.scheduled_for.getTime()),
      redriveId: cronRunRedriveJobId(row.id),
    }));
    // Every run's two jobs in one round trip.
    const states = await jobStates(
      redis,
      cronQueue,
      runs.flatMap((run) => [...run.firingIds, run.redriveId]),
    );
    let redriven = 0;
    for (const run of runs) {
      if ([...run.firingIds, run.redriveId].some((id) => states.get(id) === "live")) continue;
      if (states.get(run.redriveId) === "finished") await cronQueue.remove(run.redriveId);
      await cronQueue.add(
        CRON_RUN_JOB,
        { cronJobId: run.cron_job_id, scheduledFor: run.scheduled_for.getTime() },
        // Kept as the scheduler's own firings are (a bounded number finished), not for ever.
        { jobId: run.redriveId, ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
      );
      redriven++;
    }
    return redriven;
  }

  return { syncSchedulers, redriveRuns };
}
