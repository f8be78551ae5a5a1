import {
  type AttemptOfEvent,
  buildDeliveryRequest,
  type ClaimedEvent,
  type Clock,
  type Logger,
  maxAgeDeadline,
  type ResolvedDeliveryPolicy,
  type ResolvedRetry,
} from "@punctual/core";
import type { AttemptPlan, AttemptRecorder, AttemptResult, RecordedDelivery } from "../delivery/attempt-recorder.ts";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import { type FlowGate, notSentOutcome } from "../delivery/flow-gate.ts";
import { createInstantTimers } from "../delivery/instant-timers.ts";
import { type AttemptOutcome, type DeliveryHttpRequest, originOf } from "../delivery/transport.ts";
import type { EventStatements } from "./event-statements.ts";

// The attempts of claimed events: each is signed before its time (its timestamp is the instant
// itself), waits for the instant on a timer shared by every attempt due then, goes to the send
// dispatcher with the others of that instant in one pass, and is recorded by the attempt recorder,
// which says what follows. Connections to the origins of a claimed batch are opened ahead, once
// per batch, so the instant's requests go out on connections already open.

/** A claimed event: what its attempts send, and what the recorder needs of it. */
export class EventDelivery implements RecordedDelivery {
  readonly ids: { eventId: string };
  readonly orgId: string;
  readonly dueAt: Date;
  firstAttemptAt: Date | undefined = undefined;
  readonly origin: string;
  readonly retry: ResolvedRetry;
  attemptsMade: number;
  /** The secrets its next attempt is signed with: the claim's, then those read for each retry. */
  signingSecret: string;
  previousSigningSecret: string | null;
  constructor(
    readonly event: ClaimedEvent,
    /** Its method, headers, body mode, timeout and retries (contract §10.1), resolved. */
    readonly policy: ResolvedDeliveryPolicy,
    /** Looks up the first attempt of a delivery another worker began, by event id. */
    private readonly lookUpFirstAttempt: (eventId: string) => Promise<Date | undefined>,
  ) {
    this.ids = { eventId: event.id };
    this.orgId = event.orgId;
    this.dueAt = event.scheduledTime;
    this.origin = originOf(event.destination);
    this.signingSecret = event.signingSecret;
    this.previousSigningSecret = event.previousSigningSecret;
    this.retry = policy.retry;
    this.attemptsMade = event.attemptsMade;
  }

  findFirstAttemptAt(): Promise<Date | undefined> {
    return this.lookUpFirstAttempt(this.event.id);
  }
}

export interface EventAttemptsDeps<T> {
  clock: Clock;
  logger: Logger;
  dispatcher: Pick<Dispatcher, "submit" | "prepare">;
  /** Flows' limits and origins' health, before the dispatcher (flow-gate.ts). */
  gate: Pick<FlowGate, "admit">;
  statements: Pick<EventStatements, "record" | "signingSecrets">;
  recorder: AttemptRecorder;
  /** An attempt of `holder`'s delivery is recorded: when the next is due, if one is. */
  settled(holder: T, settled: AttemptResult): void;
  /** An attempt of `holder`'s delivery could not be recorded. */
  failed(holder: T, error: unknown): void;
  /** The gate held `holder`'s attempt back longer than this worker keeps it: back to the queue for `at`. */
  heldBack(holder: T, at: number): void;
}

export interface EventAttempts<T> {
  /**
   * Signs the attempt of `delivery` due at `at` (ms since the epoch) and sends it then, for `holder`;
   * with `currentSecrets`, signed with the organization's secrets read now (a retry), or the claim's
   * when they cannot be read.
   */
  send(holder: T, delivery: EventDelivery, at: number, currentSecrets: boolean): void;
  /** The earliest instant an attempt waits for (epoch ms), or undefined when none waits. */
  next(): number | undefined;
}

/** An attempt signed before its instant, and whose it is. */
interface SignedAttempt<T> {
  holder: T;
  delivery: EventDelivery;
  request: DeliveryHttpRequest;
  /** Its instant (ms since the epoch). */
  at: number;
}

export function createEventAttempts<T>(deps: EventAttemptsDeps<T>): EventAttempts<T> {
  const { clock, logger, dispatcher, gate, statements, recorder } = deps;
  // Sends at the instant: every request due then is handed to the dispatcher in one pass.
  const sendTimes = createInstantTimers<SignedAttempt<T>>((due) => {
    for (const attempt of due) submit(attempt);
  });
  /** Attempts signed in this turn of the event loop for a later instant, by origin. */
  let comingByOrigin: Map<string, number> | undefined;

  /** The attempt's request, signed for `at` (ms since the epoch) or now, whichever is later. */
  function requestOf(delivery: EventDelivery, at: number): DeliveryHttpRequest {
    const { event } = delivery;
    const signed = buildDeliveryRequest({
      webhookId: event.id,
      payload: event.payload,
      scheduledTime: event.scheduledTime,
      signingSecret: delivery.signingSecret,
      previousSigningSecret: delivery.previousSigningSecret,
      now: new Date(Math.max(clock.now().getTime(), at)),
      policy: delivery.policy,
    });
    return {
      url: event.destination,
      method: signed.method,
      body: signed.body,
      headers: signed.headers,
      timeoutMs: delivery.policy.timeoutMs,
    };
  }

  function sign(holder: T, delivery: EventDelivery, at: number) {
    const attempt: SignedAttempt<T> = { holder, delivery, request: requestOf(delivery, at), at };
    if (at <= Date.now()) return submit(attempt);
    sendTimes.at(at, attempt);
    expectAttempt(delivery.origin);
  }

  /** Connections to the origins of a claimed batch are opened before its instant, once per batch. */
  function expectAttempt(origin: string) {
    if (!comingByOrigin) {
      comingByOrigin = new Map();
      queueMicrotask(openConnections);
    }
    comingByOrigin.set(origin, (comingByOrigin.get(origin) ?? 0) + 1);
  }

  function openConnections() {
    const coming = comingByOrigin;
    comingByOrigin = undefined;
    for (const [origin, attempts] of coming ?? []) void dispatcher.prepare(origin, attempts);
  }

  function submit({ holder, delivery, request, at }: SignedAttempt<T>) {
    const { event, policy } = delivery;
    gate
      .admit({
        orgId: delivery.orgId,
        origin: delivery.origin,
        flowKey: event.flowKey,
        dueAt: at,
        timeoutMs: policy.timeoutMs,
        deadline: maxAgeDeadline(policy.retry, event.scheduledTime),
      })
      .then((admission) => {
        if (admission.kind === "handBack") return deps.heldBack(holder, admission.at);
        if (admission.kind === "expired")
          return settle(holder, delivery, notSentOutcome(admission.reason, clock.now()));
        // Held back a while: signed again, so that its timestamp is its sending time.
        const sent = admission.waited ? requestOf(delivery, Date.now()) : request;
        dispatcher.submit(delivery.orgId, delivery.origin, sent).then((outcome) => {
          admission.done(outcome);
          settle(holder, delivery, outcome);
        });
      });
  }

  function settle(holder: T, delivery: EventDelivery, outcome: AttemptOutcome) {
    const write = (plan: AttemptPlan) => {
      const attempt: AttemptOfEvent = {
        eventId: delivery.event.id,
        at: outcome.startedAt,
        responseStatus: outcome.responseStatus,
        responseBody: outcome.responseBody,
        durationMs: outcome.durationMs,
        error: outcome.error,
        succeeded: outcome.ok,
        maxAttempts: plan.maxAttempts,
        last: plan.last,
      };
      return statements.record(attempt);
    };
    recorder.record(delivery, outcome, write).then(
      (settled) => deps.settled(holder, settled),
      (error: unknown) => deps.failed(holder, error),
    );
  }

  return {
    send(holder, delivery, at, currentSecrets) {
      if (!currentSecrets) return sign(holder, delivery, at);
      // Signed with the secrets of its own time (a rotation or an ended overlap since the claim
      // applies), or with the claim's when they cannot be read: the retry goes out either way.
      statements.signingSecrets(delivery.orgId).then(
        (current) => {
          if (current) {
            delivery.signingSecret = current.signingSecret;
            delivery.previousSigningSecret = current.previousSigningSecret;
          }
          sign(holder, delivery, at);
        },
        (error: unknown) => {
          logger.warn(
            { err: error, eventId: delivery.event.id },
            "could not read the signing secrets for a retry; using the claim's",
          );
          sign(holder, delivery, at);
        },
      );
    },
    next: () => sendTimes.next(),
  };
}
