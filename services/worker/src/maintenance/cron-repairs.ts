import {
  type Config,
  CRON_RUN_JOB,
  type CronJobData,
  type CronJobSchedulers,
  cronJobIdOfScheduler,
  cronRunRedriveJobId,
  cronSchedulerId,
  INFRASTRUCTURE_RETRIES,
  type Redis,
  scheduleOf,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Queue } from "bullmq";
import { jobStates } from "./job-states.ts";

// The reconciler's repairs of cron jobs (reconciler.ts): Postgres says which cron jobs are Active
// and which runs are under way; Redis gets the job schedulers and the jobs that match.

export interface CronRepairsDeps {
  db: Db;
  config: Pick<Config, "RECONCILE_INTERVAL_MS" | "RECONCILE_BATCH_SIZE">;
  cronQueue: Queue<CronJobData>;
  cronJobSchedulers: CronJobSchedulers;
  /** The connection the queues use, for pipelined look-ups of many jobs at once. */
  redis: Redis;
}

export function createCronRepairs(deps: CronRepairsDeps) {
  const { db, config, cronQueue, cronJobSchedulers, redis } = deps;

  /** Every Active cron job has its job scheduler, and no other cron job has one. */
  async function syncSchedulers(): Promise<{ restored: number; removed: number }> {
    // Schedulers first, then jobs: a job created in between is then at worst scheduled twice
    // (an upsert), never unscheduled for being missing from a stale list.
    const existing = new Set(
      (await cronQueue.getJobSchedulers(0, -1)).map((scheduler) => scheduler.id ?? scheduler.key),
    );
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
    let restored = 0;
    for (const job of active) {
      if (existing.has(cronSchedulerId(job.id))) continue;
      const schedule = scheduleOf({
        ...job,
        everyMs: job.everyMs === null ? null : Number(job.everyMs),
        scheduleSince: job.scheduleSince ?? job.createdAt,
      });
      await cronJobSchedulers.schedule(job.id, schedule);
      restored++;
    }
    const wanted = new Set(active.map((job) => cronSchedulerId(job.id)));
    let removed = 0;
    for (const id of existing) {
      const cronJobId = cronJobIdOfScheduler(id);
      if (wanted.has(id) || cronJobId === undefined) continue;
      await cronJobSchedulers.unschedule(cronJobId);
      removed++;
    }
    return { restored, removed };
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

  return { syncSchedulers, redriveRuns };
}
