import { type CronJobData, firingOfSchedulerJob, type Logger } from "@punctual/core";
import type { Job } from "bullmq";

// A cron firing's BullMQ job (deliver-cron-run.ts): the time it fires for, and what rides along
// from one attempt of its run to the next (the first attempt's start).

/** A firing's data once it has been attempted: its first attempt's start (ms) rides along to the retries. */
interface CronRunJobData extends CronJobData {
  firstAttemptAt?: number;
}

/** When the run's first attempt started, when an earlier attempt of this firing's job made it. */
export function firstAttemptOf(job: Job<CronJobData>): Date | undefined {
  const at = (job.data as CronRunJobData).firstAttemptAt;
  return typeof at === "number" ? new Date(at) : undefined;
}

/**
 * The next attempt may run in another worker: the first attempt's start goes with the job, for the
 * final log line's lateness only, so failing to store it does not stop the retry.
 */
export async function keepFirstAttempt(
  job: Job<CronJobData>,
  firstAttemptAt: Date,
  logger: Logger,
  ids: { cronJobId: string; runId: string },
): Promise<void> {
  const data: CronRunJobData = { ...job.data, firstAttemptAt: firstAttemptAt.getTime() };
  await job.updateData(data).catch((error: unknown) => {
    logger.warn({ err: error, ...ids }, "could not keep a cron run's first attempt time");
  });
}

/**
 * The time a firing was due: a re-driven run, or a firing queued with its scheduler, carries it in
 * its data; a job scheduler's firing has its job's time as `prevMillis` (and in the job id), the
 * firing less the scheduler's lead (schedule.ts).
 */
export function firingTime(job: Job<CronJobData>): Date | undefined {
  if (job.data.scheduledFor !== undefined) return new Date(job.data.scheduledFor);
  const opts = job.opts as { prevMillis?: number; repeat?: { pattern?: string } };
  const fromOptions = opts.prevMillis;
  const jobTime = typeof fromOptions === "number" && fromOptions > 0 ? fromOptions : Number(job.id?.split(":").at(-1));
  return Number.isFinite(jobTime) && jobTime > 0
    ? new Date(firingOfSchedulerJob(jobTime, opts.repeat ?? {}))
    : undefined;
}
