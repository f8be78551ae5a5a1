import {
  CRON_RUN_JOB,
  type CronJobData,
  type CronJobSchedulers,
  cronRunRedriveJobId,
  type FiringAftermath,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
  type Logger,
} from "@punctual/core";
import type { Queue } from "bullmq";

// What a firing's decision (deliver-cron-run.ts) leaves to Redis, the step "Follow up" of
// docs/architecture.md ("How a cron job's firing is processed"): the jobs of the runs it caught up,
// and a Completed job's scheduler to take off. Failing here loses nothing: the reconciler re-drives
// Queued runs without a job and removes the schedulers of jobs that are not Active.

export interface FiringFollowUpDeps {
  /** The cron queue: jobs of caught-up runs. */
  cronQueue: Queue<CronJobData>;
  /** Takes a Completed job's scheduler off. */
  cronJobSchedulers: Pick<CronJobSchedulers, "unschedule">;
  logger: Logger;
}

export async function followUpFiring(
  deps: FiringFollowUpDeps,
  cronJobId: string,
  after: FiringAftermath,
): Promise<void> {
  const { cronQueue, logger } = deps;
  if (after.caughtUp.length > 0) {
    await cronQueue
      .addBulk(
        after.caughtUp.map((run) => ({
          name: CRON_RUN_JOB,
          data: { cronJobId, scheduledFor: run.scheduledFor.getTime() },
          opts: { jobId: cronRunRedriveJobId(run.id), ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
        })),
      )
      .catch((error: unknown) =>
        logger.warn({ err: error, cronJobId }, "could not queue caught-up cron runs; the reconciler will"),
      );
    logger.info(
      { cronJobId, runs: after.caughtUp.map((run) => run.scheduledFor.toISOString()) },
      "cron job caught up missed firings",
    );
  }
  if (after.completed) {
    logger.info({ cronJobId }, "cron job Completed: its maxRuns ran or no firing is left");
    await deps.cronJobSchedulers
      .unschedule(cronJobId)
      .catch((error: unknown) =>
        logger.warn(
          { err: error, cronJobId },
          "could not remove a Completed cron job's scheduler; the reconciler will",
        ),
      );
  }
}
