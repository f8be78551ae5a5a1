import type { Queue } from "bullmq";
import { type CronJobData, cronSchedulerId } from "../queues.ts";

/** Name of the job each firing of a cron job's scheduler creates. */
export const CRON_RUN_JOB = "cron-run";

/**
 * BullMQ's own retries of a cron run job, for every job that runs a firing (a scheduler's or a
 * re-drive's). As for events, delivery retries re-delay the job; these cover infrastructure failures.
 */
export const CRON_RUN_RETRIES = { attempts: 8, backoff: { type: "exponential", delay: 1_000 } } as const;

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
  const requireConnection = () => {
    if (!isConnected()) throw new Error("Redis is not connected");
  };
  return {
    async schedule(job) {
      requireConnection();
      await queue.upsertJobScheduler(
        cronSchedulerId(job.id),
        { pattern: job.expression, tz: job.timezone },
        {
          name: CRON_RUN_JOB,
          data: { cronJobId: job.id },
          opts: {
            ...CRON_RUN_RETRIES,
            removeOnComplete: { count: 1_000 },
            removeOnFail: { count: 5_000 },
          },
        },
      );
    },
    async unschedule(cronJobId) {
      requireConnection();
      await queue.removeJobScheduler(cronSchedulerId(cronJobId));
    },
  };
}
