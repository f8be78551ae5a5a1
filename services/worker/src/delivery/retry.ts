import { DelayedError, type Job } from "bullmq";

/**
 * Runs the same job again at `at` (ms since the epoch) without spending one of BullMQ's attempts:
 * delivery retries and rescheduled events are counted in Postgres, not by BullMQ.
 */
export async function runJobAgainAt(job: Job, at: number, token: string | undefined): Promise<never> {
  await job.moveToDelayed(at, token);
  throw new DelayedError();
}

/** How long an attempt's outcome is kept and its recording retried while Postgres is unreachable. */
export const RECORD_RETRY_FOR_MS = 60_000;
const RECORD_RETRY_EVERY_MS = 500;

/**
 * Records an attempt that has already been made, retrying while Postgres is unreachable (a
 * restart, a failover): the outcome is kept rather than lost, so the delivery is not sent again
 * just because its record failed. Gives up (rejects) RECORD_RETRY_FOR_MS after the first try.
 * An attempt recorded at the first try, the usual case, costs no more than the record itself.
 */
export function recordSurely<T>(record: () => Promise<T>, onRetry: (error: unknown) => void): Promise<T> {
  const giveUpAt = Date.now() + RECORD_RETRY_FOR_MS;
  return record().catch((error: unknown) => keepRecording(record, onRetry, error, giveUpAt));
}

async function keepRecording<T>(
  record: () => Promise<T>,
  onRetry: (error: unknown) => void,
  firstError: unknown,
  giveUpAt: number,
): Promise<T> {
  if (Date.now() >= giveUpAt) throw firstError;
  onRetry(firstError);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, RECORD_RETRY_EVERY_MS));
    try {
      return await record();
    } catch (error) {
      if (Date.now() >= giveUpAt) throw error;
    }
  }
}
