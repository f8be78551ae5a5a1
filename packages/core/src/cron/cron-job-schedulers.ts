import type { Queue } from "bullmq";
import {
  type CronJobData,
  connectionGuard,
  cronSchedulerId,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
} from "../queues.ts";
import { nextCronRun } from "./expression.ts";

/** Name of the job each firing of a cron job's scheduler creates. */
export const CRON_RUN_JOB = "cron-run";

/**
 * Puts cron jobs on BullMQ job schedulers (one per Active job, id `cron-<id>`, carrying only the id)
 * and takes them off. Postgres stays the truth: the reconciler restores schedulers that are missing.
 */
export interface CronJobSchedulers {
  /** Creates or replaces the scheduler; it fires from the next matching time on. */
  schedule(job: { id: string; expression: string; timezone: string }): Promise<void>;
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
    async schedule(job) {
      requireConnection();
      await queue.upsertJobScheduler(
        cronSchedulerId(job.id),
        { pattern: job.expression, tz: job.timezone, ...firstRunStart(job) },
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

/**
 * Where BullMQ's search for a scheduler's first run starts: 1 ms before the run as we compute it
 * (in bounded work, next-run.ts), instead of now. From now, BullMQ's search (cron-parser) walks the
 * calendar a step per unmatched day or month, hundreds of steps for a run years away, and across
 * Lord Howe Island's half-hour change of clocks loops to its limit and finds nothing. BullMQ
 * computes each later run from the one before, `startDate` being past by then.
 */
function firstRunStart(job: { expression: string; timezone: string }): { startDate?: Date } {
  let next: Date | undefined;
  try {
    next = nextCronRun(job.expression, job.timezone, new Date());
  } catch {
    // Not an expression of ours (a test's six fields): BullMQ searches from now.
  }
  return next === undefined ? {} : { startDate: new Date(next.getTime() - 1) };
}
