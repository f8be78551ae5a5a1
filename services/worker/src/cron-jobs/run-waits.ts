import {
  type CronJobData,
  cronRunRedriveJobId,
  type Logger,
  nextWaitingCronRun,
  type RunWait,
  schedulerFiringJobIds,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job, Queue } from "bullmq";
import { runJobAgainAt } from "../delivery/retry.ts";

// A run that may not go yet, the step "Wait" of docs/architecture.md ("How a cron job's firing is
// processed"): until its jittered time, or (overlap: buffer) until the runs before it have ended,
// its firing's job waits in the queue, delayed, nobody's, holding no memory here. The worker that
// ends a run of a buffer job wakes the waiting run's job at once; it also looks again every
// BUFFERED_RECHECK_MS by itself.

/**
 * How often a buffered run (overlap: buffer) looks again whether the runs before it ended, when the
 * worker ending them did not wake it (it normally does, at once).
 */
export const BUFFERED_RECHECK_MS = 1_000;

/** A run that may not go yet: its firing's job waits in the queue (holding no memory here). */
export function waitInQueue(job: Job<CronJobData>, token: string | undefined, wait: RunWait): Promise<never> {
  return runJobAgainAt(job, wait.reason === "jitter" ? wait.until : Date.now() + BUFFERED_RECHECK_MS, token);
}

/**
 * With overlap buffer, the run that waits for the one that just ended goes now: its job (the
 * scheduler's firing, or the job of a caught-up or re-driven run) is moved out of its delay.
 */
export async function wakeBuffered(
  deps: { db: Db; cronQueue: Queue<CronJobData>; logger: Logger },
  cronJobId: string,
): Promise<void> {
  const { db, cronQueue, logger } = deps;
  try {
    const waiting = await nextWaitingCronRun(db, cronJobId);
    if (!waiting) return;
    const firing = waiting.scheduledFor.getTime();
    for (const id of [...schedulerFiringJobIds(cronJobId, firing), cronRunRedriveJobId(waiting.id)]) {
      const queued = await cronQueue.getJob(id);
      if (queued && (await queued.isDelayed())) await queued.promote();
    }
  } catch (error) {
    // It looks again by itself within BUFFERED_RECHECK_MS.
    logger.debug({ err: error, cronJobId }, "could not wake a buffered cron run");
  }
}
