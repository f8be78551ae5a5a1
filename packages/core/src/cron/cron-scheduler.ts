import type { Queue } from "bullmq";
import {
  type CronJobData,
  connectionGuard,
  cronSchedulerId,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
} from "../queues.ts";

/** Name of the job each firing of a cron job's scheduler creates. */
export const CRON_RUN_JOB = "cron-run";

/**
 * Puts cron jobs on BullMQ job schedulers (one per Active job, id `cron-<id>`, carrying only the id)
 * and takes them off. Postgres stays the truth: the reconciler restores schedulers that are missing.
 */
export interface CronScheduler {
  /** Creates or replaces the scheduler; it fires from the next matching time on. */
  schedule(job: { id: string; expression: string; timezone: string }): Promise<void>;
  /** Removes the scheduler and its next pending firing. */
  unschedule(cronJobId: string): Promise<void>;
}

export function createCronScheduler(
  queue: Queue<CronJobData>,
  /** Whether Redis is reachable now; BullMQ would otherwise wait for a connection (see EventScheduler). */
  isConnected: () => boolean = () => true,
): CronScheduler {
  const requireConnection = connectionGuard(isConnected);
  return {
    async schedule(job) {
      requireConnection();
      await queue.upsertJobScheduler(
        cronSchedulerId(job.id),
        { pattern: job.expression, tz: job.timezone },
        {
          name: CRON_RUN_JOB,
          data: { cronJobId: job.id },
          opts: { ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
        },
      );
    },
    async unschedule(cronJobId) {
      requireConnection();
      await queue.removeJobScheduler(cronSchedulerId(cronJobId));
    },
  };
}
