import type { Queue } from "bullmq";
import {
  type CronJobData,
  connectionGuard,
  cronSchedulerId,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
} from "../queues.ts";
import { CRON_LEAD_MS, firingsBetween, nextFiring, repeatOptionsOf, type Schedule } from "./schedule.ts";

/** Name of the job each firing of a cron job's scheduler creates. */
export const CRON_RUN_JOB = "cron-run";

/**
 * The ids a firing's job may have when its scheduler made it: with the lead (due CRON_LEAD_MS before
 * the firing, schedule.ts), and without (a scheduler made before the lead existed).
 */
export const schedulerFiringJobIds = (cronJobId: string, firing: number): [string, string] => [
  schedulerJobIdAt(cronJobId, firing - CRON_LEAD_MS),
  schedulerJobIdAt(cronJobId, firing),
];

/** The id of the job a cron job's scheduler makes due at `jobMillis` (BullMQ's own form). */
export const schedulerJobIdAt = (cronJobId: string, jobMillis: number) =>
  `repeat:${cronSchedulerId(cronJobId)}:${jobMillis}`;

/**
 * Puts cron jobs on BullMQ job schedulers (one per Active job, id `cron-<id>`, carrying only the id)
 * and takes them off. Postgres stays the truth: the reconciler restores schedulers that are missing.
 * The scheduler fires when `nextFiring` says (schedule.ts): its queue is built with CRON_QUEUE_SETTINGS.
 */
export interface CronJobSchedulers {
  /** Creates or replaces the scheduler; it fires from the schedule's next firing after now on. A schedule with no firing left removes it. */
  schedule(cronJobId: string, schedule: Schedule): Promise<void>;
  /** Removes the scheduler and its next pending firing. */
  unschedule(cronJobId: string): Promise<void>;
}

export function createCronJobSchedulers(
  queue: Queue<CronJobData>,
  /** Whether Redis is reachable now; BullMQ would otherwise wait for a connection (see EventQueue). */
  isConnected: () => boolean = () => true,
): CronJobSchedulers {
  const requireConnection = connectionGuard(isConnected);
  return {
    async schedule(cronJobId, schedule) {
      requireConnection();
      // Nothing left to fire (its window is over): no scheduler. BullMQ would keep the previous one
      // firing by its old schedule, or refuse an endDate already past.
      if (nextFiring(schedule, Date.now()) === undefined) {
        await queue.removeJobScheduler(cronSchedulerId(cronJobId));
        return;
      }
      const now = Date.now();
      await queue.upsertJobScheduler(cronSchedulerId(cronJobId), repeatOptionsOf(schedule), {
        name: CRON_RUN_JOB,
        data: { cronJobId },
        opts: { ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
      });
      await queueFiringsWithinLead(queue, cronJobId, schedule, now);
    },
    async unschedule(cronJobId) {
      requireConnection();
      await queue.removeJobScheduler(cronSchedulerId(cronJobId));
    },
  };
}

/**
 * Queues the firings after `after` and within a lead of now, which a job scheduler skips: asked at
 * `t` (when made, or when a worker takes its job), it makes the first firing after `t` plus the
 * lead (schedule.ts). Each gets the job the scheduler would have made (the same id, so a firing it
 * did make is not queued twice), carrying its firing time.
 */
export async function queueFiringsWithinLead(
  queue: Queue<CronJobData>,
  cronJobId: string,
  schedule: Schedule,
  after: number,
): Promise<void> {
  const soon = firingsBetween(schedule, after, Date.now() + CRON_LEAD_MS, 10);
  if (soon.length === 0) return;
  await queue.addBulk(
    soon.map((firing) => ({
      name: CRON_RUN_JOB,
      data: { cronJobId, scheduledFor: firing },
      opts: {
        jobId: schedulerFiringJobIds(cronJobId, firing)[0],
        delay: Math.max(0, firing - CRON_LEAD_MS - Date.now()),
        ...INFRASTRUCTURE_RETRIES,
        ...KEEP_FINISHED_JOBS,
      },
    })),
  );
}
