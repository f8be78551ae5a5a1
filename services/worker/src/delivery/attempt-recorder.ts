import { performance } from "node:perf_hooks";
import {
  type Clock,
  type Config,
  type FinalReason,
  type Logger,
  maxAttempts,
  planRetry,
  type RecordedAttempt,
  type ResolvedRetry,
  type RetryPlan,
} from "@punctual/core";
import { type DeliveryMetrics, deliveryOutcome } from "../metrics/worker-metrics.ts";
import type { Bookkeeping } from "./bookkeeping.ts";
import { recordSurely } from "./retry.ts";
import type { AttemptOutcome } from "./transport.ts";

// What follows every attempt of an event or a cron run, once its answer is in: the outcome is
// recorded surely (kept and retried while Postgres is unreachable), counted in the metrics, and
// either the delivery ends — one `info` line says how — or the next attempt's time is decided by the
// delivery's retry policy (planRetry: its schedule, a 429/503's Retry-After, maxAgeMs, stopOnStatus;
// contract §10.1), before the record, so that the record ends a delivery with no attempt to follow.
// How a retry then waits differs (an event's job waits in memory, a cron run's goes back to the
// queue): that stays with each processor.
//
// The `info` line of a final outcome is bookkeeping (bookkeeping.ts): during a burst, serializing
// ten thousand lines would take the time of its last requests. The line's `time` is then when the
// burst's last answer came back (at most BOOKKEEPING_MAX_WAIT_MS after the outcome); its fields say
// everything else.

/** One delivery (an event, or a cron run) whose attempts are recorded here. */
export interface RecordedDelivery {
  /** Names the delivery in log lines: `{ eventId }` or `{ cronJobId, runId }`. */
  readonly ids: Readonly<Record<string, string>>;
  readonly orgId: string;
  /** When it was due: the event's scheduledTime, the run's scheduledFor. */
  readonly dueAt: Date;
  /**
   * When its first attempt started, once known; set here when this process records attempt 1, or
   * by the processor from what an earlier process left (a cron run's job data).
   */
  firstAttemptAt: Date | undefined;
  /**
   * Looks up the first attempt's start when this process did not make it (a delivery resumed
   * after another worker); asked only for a final outcome, so off the burst's path.
   */
  readonly findFirstAttemptAt?: () => Promise<Date | undefined>;
  /** Its retry policy, resolved (the deployment's schedule when it has none). */
  readonly retry: ResolvedRetry;
  /** Attempts recorded so far, as this process knows them; updated here by each record. */
  attemptsMade: number;
}

/** What the record of an attempt must know: whether a failure ends the delivery. */
export interface AttemptPlan {
  /** The most attempts the delivery makes. */
  maxAttempts: number;
  /** Whether no attempt follows if this one failed. */
  last: boolean;
}

export interface AttemptResult extends RecordedAttempt {
  /** When the next attempt is due (ms since the epoch); undefined when the delivery is over. */
  retryAt: number | undefined;
}

export interface AttemptRecorderDeps {
  /** How log lines name the delivery: "event" or "cron run". */
  noun: "event" | "cron run";
  clock: Clock;
  config: Pick<Config, "RETRY_AFTER_MAX_MS">;
  logger: Logger;
  metrics: DeliveryMetrics;
  /** Outcome lines wait while a burst is being sent. */
  bookkeeping: Pick<Bookkeeping, "busy" | "afterSends">;
}

export interface AttemptRecorder {
  /**
   * Records an attempt already made (`write` stores it, kept and retried while Postgres is
   * unreachable) and decides what follows. `write` answers attempt 0 when nothing was recorded
   * because the delivery was no longer Queued (another job finished it).
   */
  record(
    delivery: RecordedDelivery,
    outcome: AttemptOutcome,
    write: (plan: AttemptPlan) => Promise<RecordedAttempt>,
  ): Promise<AttemptResult>;
}

export function createAttemptRecorder(deps: AttemptRecorderDeps): AttemptRecorder {
  const { noun, clock, config, logger, metrics, bookkeeping } = deps;
  const sentMessage = `${noun} sent`;
  const failedMessage = `${noun} failed to send`;
  const recordRetryMessage = `could not record ${noun === "event" ? "an event" : "a cron run"} attempt; retrying`;

  /** The first attempt's start for a delivery this process did not begin, if it can be found. */
  async function findFirstAttemptAt(delivery: RecordedDelivery): Promise<Date | undefined> {
    try {
      return await delivery.findFirstAttemptAt?.();
    } catch (error) {
      logger.warn({ err: error, ...delivery.ids }, `could not read the first attempt of a delivery`);
      return undefined;
    }
  }

  /**
   * A final outcome whose line is still to be written: a fixed shape that keeps nothing else of the
   * delivery alive (not its payload).
   */
  interface OutcomeLine {
    ids: Readonly<Record<string, string>>;
    orgId: string;
    attempts: number;
    firstAttemptLatenessMs: number | null;
    responseStatus: number | null;
    error: string | null;
    sent: boolean;
    /** Why a failed delivery ended before its schedule did: `stopOnStatus` or `maxAge`. */
    endedBy: FinalReason | undefined;
  }

  /** The line of a final outcome: ids, counts and the last answer, never the payload or a secret. */
  function writeLine(line: OutcomeLine) {
    logger.info(
      {
        ...line.ids,
        orgId: line.orgId,
        attempts: line.attempts,
        firstAttemptLatenessMs: line.firstAttemptLatenessMs,
        responseStatus: line.responseStatus,
        error: line.error,
        ...(line.endedBy === undefined || line.endedBy === "noAttemptsLeft" ? {} : { endedBy: line.endedBy }),
      },
      line.sent ? sentMessage : failedMessage,
    );
  }

  // Outcomes held while a burst is being sent, their lines built and written together once the
  // sends are quiet: even the fields object of each line is work the burst's last requests wait for.
  let heldLines: OutcomeLine[] = [];
  function writeHeldLines() {
    const lines = heldLines;
    heldLines = [];
    for (const line of lines) writeLine(line);
  }
  function logOutcome(line: OutcomeLine) {
    if (!bookkeeping.busy && heldLines.length === 0) {
      writeLine(line);
      return;
    }
    heldLines.push(line);
    if (heldLines.length === 1) void bookkeeping.afterSends().then(writeHeldLines);
  }

  /** What follows a recorded attempt: metrics, the outcome line of a final one, or the retry's time. */
  function afterRecord(
    delivery: RecordedDelivery,
    outcome: AttemptOutcome,
    recorded: RecordedAttempt,
    plan: RetryPlan | undefined,
    answeredAt: number,
  ): AttemptResult | Promise<AttemptResult> {
    metrics.recorded(performance.now() - answeredAt);
    const { attempt, final } = recorded;
    if (attempt === 0) {
      logger.debug({ ...delivery.ids }, `${noun} attempt not recorded: no longer Queued`);
      return { attempt, final, retryAt: undefined };
    }
    if (attempt === 1) delivery.firstAttemptAt = outcome.startedAt;
    delivery.attemptsMade = attempt;
    metrics.attempt(
      deliveryOutcome(outcome.ok, final),
      outcome.durationMs,
      attempt === 1 ? outcome.startedAt.getTime() - delivery.dueAt.getTime() : undefined,
    );
    if (final !== null) {
      const endedBy = plan?.final;
      if (delivery.firstAttemptAt !== undefined) {
        return ended(delivery, outcome, recorded, delivery.firstAttemptAt, endedBy);
      }
      return findFirstAttemptAt(delivery).then((first) => ended(delivery, outcome, recorded, first, endedBy));
    }
    // Succeeded without ending the delivery: another job had ended it meanwhile.
    if (outcome.ok || plan?.retryAt === undefined) return { attempt, final, retryAt: undefined };
    const { retryAt } = plan;
    logger.debug({ ...delivery.ids, attempt, retryAt, error: outcome.error }, `${noun} retry`);
    return { attempt, final, retryAt };
  }

  /** A final outcome: its line, and nothing follows. */
  function ended(
    delivery: RecordedDelivery,
    outcome: AttemptOutcome,
    recorded: RecordedAttempt,
    first: Date | undefined,
    endedBy: FinalReason | undefined,
  ): AttemptResult {
    const { attempt, final } = recorded;
    logOutcome({
      ids: delivery.ids,
      orgId: delivery.orgId,
      attempts: attempt,
      firstAttemptLatenessMs: first === undefined ? null : first.getTime() - delivery.dueAt.getTime(),
      responseStatus: outcome.responseStatus,
      error: outcome.error,
      sent: final === "Sent",
      endedBy: final === "Sent" ? undefined : endedBy,
    });
    return { attempt, final, retryAt: undefined };
  }

  return {
    record(delivery, outcome, write) {
      const answeredAt = performance.now();
      // What follows a failure is decided now, from the answer: the record then ends a delivery
      // with no attempt to follow in the same statement.
      const plan = outcome.ok
        ? undefined
        : planRetry({
            retry: delivery.retry,
            attempt: delivery.attemptsMade + 1,
            responseStatus: outcome.responseStatus,
            retryAfter: outcome.retryAfter,
            scheduledTime: delivery.dueAt,
            now: clock.now(),
            retryAfterMaxMs: config.RETRY_AFTER_MAX_MS,
          });
      const attemptPlan: AttemptPlan = { maxAttempts: maxAttempts(delivery.retry), last: plan?.final !== undefined };
      return recordSurely(
        () => write(attemptPlan),
        (error) => logger.warn({ err: error, ...delivery.ids }, recordRetryMessage),
      ).then((recorded) => afterRecord(delivery, outcome, recorded, plan, answeredAt));
    },
  };
}
