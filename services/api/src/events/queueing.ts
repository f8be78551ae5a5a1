import { type Logger, withTimeout } from "@punctual/core";

/**
 * How long a request waits for Redis to take or drop an event's job. The production queue already
 * runs on a fail-fast connection; this bound holds whatever the connection does.
 */
export const QUEUE_TIMEOUT_MS = 2_000;

/**
 * Runs a queue operation (schedule, reschedule, unschedule) for an event or cron job whose change
 * is already committed in Postgres. A failure or a timeout is logged, never thrown: Postgres is the
 * truth and the reconciler puts the queue right later (contract §3, §6).
 */
export async function tryQueueOperation(
  log: Logger,
  what: string,
  /** The event or cron job, for the log. */
  recordId: string,
  operation: () => Promise<void>,
  timeoutMs = QUEUE_TIMEOUT_MS,
): Promise<void> {
  const attempt = Promise.resolve().then(operation);
  try {
    const outcome = await withTimeout(
      attempt.then(() => "done" as const),
      timeoutMs,
      "timeout" as const,
    );
    if (outcome === "timeout") {
      log.warn({ recordId, timeoutMs }, `${what} timed out; the reconciler will put the queue right`);
      // It may still settle later; a late failure must not become an unhandled rejection.
      attempt.catch((error: unknown) => log.warn({ err: error, recordId }, `${what} failed after timing out`));
    }
  } catch (error) {
    log.warn({ err: error, recordId }, `${what} failed; the reconciler will put the queue right`);
  }
}
