import type { Queue } from "bullmq";
import {
  type CronJobData,
  connectionGuard,
  cronSchedulerId,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
} from "../queues.ts";
import { nextFiring, repeatOptionsOf, type Schedule } from "./schedule.ts";

/** Name of the job each firing of a cron job's scheduler creates. */
export const CRON_RUN_JOB = "cron-run";

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
      await queue.upsertJobScheduler(cronSchedulerId(cronJobId), repeatOptionsOf(schedule), {
        name: CRON_RUN_JOB,
        data: { cronJobId },
        opts: { ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
      });
    },
    async unschedule(cronJobId) {
      requireConnection();
      await queue.removeJobScheduler(cronSchedulerId(cronJobId));
    },
  };
}
