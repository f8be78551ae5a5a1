import { DelayedError, type Job } from "bullmq";

/** The wait before the attempt after `attempt` (1-based), from the configured schedule. */
export function retryDelay(retryDelaysMs: readonly number[], attempt: number): number {
  return retryDelaysMs[attempt - 1] ?? retryDelaysMs.at(-1) ?? 0;
}

/**
 * Runs the same job again at `at` (ms since the epoch) without spending one of BullMQ's attempts:
 * delivery retries and rescheduled events are counted in Postgres, not by BullMQ.
 */
export async function runJobAgainAt(job: Job, at: number, token: string | undefined): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}
