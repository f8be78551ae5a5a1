import {
  type AttemptOfEvent,
  buildDeliveryRequest,
  type Clock,
  type Config,
  claimEvents,
  createBatcher,
  type EventJobData,
  type Logger,
  recordAttempts,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job } from "bullmq";
import { retryDelay, runJobAgainAt } from "../delivery/retry.ts";
import type { Sender } from "../delivery/send.ts";
import { type DeliveryMetrics, deliveryOutcome } from "../metrics/worker-metrics.ts";

export interface EventProcessorDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "CLAIM_LEAD_MS" | "RETRY_DELAYS_MS">;
  sender: Sender;
  logger: Logger;
  metrics: DeliveryMetrics;
}

/**
 * Processes one event job (contract §5, §6): claim the event in Postgres, wait for its exact time,
 * send it signed, record the attempt. A failed attempt re-delays this same job by the retry
 * schedule; the attempt after the last delay ends the event `Failed To Send`.
 */
export function createEventProcessor(deps: EventProcessorDeps) {
  const { db, clock, config, sender, logger, metrics } = deps;
  const maxAttempts = config.RETRY_DELAYS_MS.length + 1;
  // Jobs running at the same moment share one claim statement and one record statement: under a
  // burst this turns hundreds of commits into a few (see bench/RESULTS.md).
  const claims = createBatcher((eventIds: string[]) => {
    const now = clock.now();
    return claimEvents(db, eventIds, new Date(now.getTime() + config.CLAIM_LEAD_MS), now);
  });
  const records = createBatcher((attempts: AttemptOfEvent[]) => recordAttempts(db, attempts, maxAttempts));

  return async function processEventJob(job: Job<EventJobData>, token?: string): Promise<void> {
    const { eventId } = job.data;
    const claim = await claims.run(eventId);
    if (claim.kind === "finished") return;
    if (claim.kind === "not-due") {
      // The event was moved later than this job's time: wait for its new time.
      return runJobAgainAt(job, claim.scheduledTime.getTime() - config.CLAIM_LEAD_MS, token);
    }

    const event = claim.event;
    // Claimed ahead of time (the lead): the request is prepared now and leaves exactly at its time.
    const now = clock.now().getTime();
    const due = event.scheduledTime.getTime();
    const request = buildDeliveryRequest({
      webhookId: event.id,
      payload: event.payload,
      scheduledTime: event.scheduledTime,
      signingSecret: event.signingSecret,
      now: new Date(Math.max(now, due)),
    });
    const outcome = await sender.sendAfter(
      { url: event.destination, body: request.body, headers: request.headers },
      due - now,
    );
    const startedAt = outcome.startedAt;
    const recorded = await records.run({
      eventId: event.id,
      at: startedAt,
      responseStatus: outcome.responseStatus,
      durationMs: outcome.durationMs,
      error: outcome.error,
      succeeded: outcome.ok,
    });
    metrics.attempt(
      deliveryOutcome(outcome.ok, recorded.final),
      outcome.durationMs,
      recorded.attempt === 1 ? startedAt.getTime() - due : undefined,
    );
    if (outcome.ok || recorded.final !== null) {
      logger.debug({ eventId, attempt: recorded.attempt, final: recorded.final ?? "Sent" }, "event delivery finished");
      return;
    }
    const delay = retryDelay(config.RETRY_DELAYS_MS, recorded.attempt);
    logger.debug({ eventId, attempt: recorded.attempt, delay, error: outcome.error }, "event delivery will be retried");
    return runJobAgainAt(job, clock.now().getTime() + delay, token);
  };
}
