import { performance } from "node:perf_hooks";
import type { Clock, Config, Logger, RecordedAttempt } from "@punctual/core";
import { type DeliveryMetrics, deliveryOutcome } from "../metrics/worker-metrics.ts";
import { recordSurely, retryDelay } from "./retry.ts";
import type { SendScheduler } from "./send-scheduler.ts";
import type { AttemptOutcome } from "./transport.ts";

// What follows every attempt of an event or a cron run, once its answer is in: the outcome is
// recorded surely (kept and retried while Postgres is unreachable), counted in the metrics, and
// either the delivery ends — one `info` line says how — or the next attempt's time is decided.
// How a retry then waits differs (an event's job waits in memory, a cron run's goes back to the
// queue): that stays with each processor.
//
// The `info` line of a final outcome is written once the sends are quiet (no attempt waits for a
// send slot, none is in flight): during a burst, serializing ten thousand lines would take the time
// of its last requests. The line's `time` is then when the burst's last answer came back (at most
// 2 s after the outcome); its fields say everything else.

/** The longest an outcome line waits for the sends to be quiet. */
const MAX_LINE_HOLD_MS = 2_000;

/** One delivery (an event, or a cron run) whose attempts are settled here. */
export interface SettledDelivery {
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
}

export interface SettledAttempt extends RecordedAttempt {
  /** When the next attempt is due (ms since the epoch); undefined when the delivery is over. */
  retryAt: number | undefined;
}

export interface AttemptSettlerDeps {
  /** How log lines name the delivery: "event" or "cron run". */
  noun: "event" | "cron run";
  clock: Clock;
  config: Pick<Config, "RETRY_DELAYS_MS">;
  logger: Logger;
  metrics: DeliveryMetrics;
  /** The process's send scheduler: outcome lines wait while a burst is being sent. */
  scheduler: Pick<SendScheduler, "waiting" | "whenQuiet">;
}

export interface AttemptSettler {
  /**
   * Records an attempt already made and decides what follows. `record` answers attempt 0 when
   * nothing was recorded because the delivery was no longer Queued (another job finished it).
   */
  settle(
    delivery: SettledDelivery,
    outcome: AttemptOutcome,
    record: () => Promise<RecordedAttempt>,
  ): Promise<SettledAttempt>;
}

export function createAttemptSettler(deps: AttemptSettlerDeps): AttemptSettler {
  const { noun, clock, config, logger, metrics, scheduler } = deps;
  const sentMessage = `${noun} sent`;
  const failedMessage = `${noun} failed to send`;
  const recordRetryMessage = `could not record ${noun === "event" ? "an event" : "a cron run"} attempt; retrying`;

  /** The first attempt's start for a delivery this process did not begin, if it can be found. */
  async function findFirstAttemptAt(delivery: SettledDelivery): Promise<Date | undefined> {
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
      },
      line.sent ? sentMessage : failedMessage,
    );
  }

  // Outcomes held while a burst is being sent, their lines built and written together once the
  // sends are quiet: even the fields object of each line is work the burst's last requests wait for.
  let heldLines: OutcomeLine[] = [];
  let holdTimer: NodeJS.Timeout | undefined;
  function writeHeldLines() {
    clearTimeout(holdTimer);
    holdTimer = undefined;
    const lines = heldLines;
    heldLines = [];
    for (const line of lines) writeLine(line);
  }
  function logOutcome(line: OutcomeLine) {
    if (scheduler.waiting === 0 && heldLines.length === 0) {
      writeLine(line);
      return;
    }
    heldLines.push(line);
    if (heldLines.length > 1) return;
    // Under sustained load something may always wait: lines are never held longer than this.
    holdTimer = setTimeout(writeHeldLines, MAX_LINE_HOLD_MS);
    holdTimer.unref();
    void scheduler.whenQuiet().then(writeHeldLines);
  }

  /** What follows a recorded attempt: metrics, the outcome line of a final one, or the retry's time. */
  function afterRecord(
    delivery: SettledDelivery,
    outcome: AttemptOutcome,
    recorded: RecordedAttempt,
    answeredAt: number,
  ): SettledAttempt | Promise<SettledAttempt> {
    metrics.recorded(performance.now() - answeredAt);
    const { attempt, final } = recorded;
    if (attempt === 0) {
      logger.debug({ ...delivery.ids }, `${noun} attempt not recorded: no longer Queued`);
      return { attempt, final, retryAt: undefined };
    }
    if (attempt === 1) delivery.firstAttemptAt = outcome.startedAt;
    metrics.attempt(
      deliveryOutcome(outcome.ok, final),
      outcome.durationMs,
      attempt === 1 ? outcome.startedAt.getTime() - delivery.dueAt.getTime() : undefined,
    );
    if (final !== null) {
      if (delivery.firstAttemptAt !== undefined) return ended(delivery, outcome, recorded, delivery.firstAttemptAt);
      return findFirstAttemptAt(delivery).then((first) => ended(delivery, outcome, recorded, first));
    }
    // Succeeded without ending the delivery: another job had ended it meanwhile.
    if (outcome.ok) return { attempt, final, retryAt: undefined };
    const retryAt = clock.now().getTime() + retryDelay(config.RETRY_DELAYS_MS, attempt);
    logger.debug({ ...delivery.ids, attempt, retryAt, error: outcome.error }, `${noun} retry`);
    return { attempt, final, retryAt };
  }

  /** A final outcome: its line, and nothing follows. */
  function ended(
    delivery: SettledDelivery,
    outcome: AttemptOutcome,
    recorded: RecordedAttempt,
    first: Date | undefined,
  ): SettledAttempt {
    const { attempt, final } = recorded;
    logOutcome({
      ids: delivery.ids,
      orgId: delivery.orgId,
      attempts: attempt,
      firstAttemptLatenessMs: first === undefined ? null : first.getTime() - delivery.dueAt.getTime(),
      responseStatus: outcome.responseStatus,
      error: outcome.error,
      sent: final === "Sent",
    });
    return { attempt, final, retryAt: undefined };
  }

  return {
    settle(delivery, outcome, record) {
      const answeredAt = performance.now();
      return recordSurely(record, (error) => logger.warn({ err: error, ...delivery.ids }, recordRetryMessage)).then(
        (recorded) => afterRecord(delivery, outcome, recorded, answeredAt),
      );
    },
  };
}
