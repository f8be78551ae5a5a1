import type { Clock, Config, Logger } from "@punctual/core";
import type { Db } from "@punctual/db";
import { createAttemptRecorder } from "../delivery/attempt-recorder.ts";
import type { Bookkeeping } from "../delivery/bookkeeping.ts";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import type { FlowGate } from "../delivery/flow-gate.ts";
import { createInstantTimers } from "../delivery/instant-timers.ts";
import type { DeliveryOwners, OwnerDecision } from "../delivery/owners.ts";
import type { DeliveryMetrics } from "../metrics/worker-metrics.ts";
import { createEventAttempts, type EventDelivery } from "./event-attempts.ts";
import type { EventJobFeed, HeldJob } from "./event-job-feed.ts";
import type { EventEffect, EventSignal, EventStage, EventStep, JobEnd, StageContext } from "./event-stages.ts";
import { createEventStatements } from "./event-statements.ts";
import { nextStage, takenStep } from "./event-transitions.ts";

// The driver of the events a worker holds ("prepare early, claim late"): the job feed hands over a
// job PREPARE_AHEAD_MS before its event's time; the event is read and held prepared, claimed
// CLAIM_LEAD_MS before its time, sent at the instant and recorded. Where an event stands, and what
// each signal makes of it, is decided by nextStage (event-transitions.ts; the stages are described
// in event-stages.ts). This module only runs what it asks for: the statements
// (event-statements.ts), the attempts (event-attempts.ts), the timers of claims and retries, and
// the job's one end in the job feed.
//
// Each held event is one small object and one stage: no promise chain is kept per event while it
// waits, and the events due at one instant share one timer, so a worker holds tens of thousands of
// prepared events in a few hundred bytes each (bench/prepared-memory.ts).

export interface EventProcessorDeps {
  db: Db;
  clock: Clock;
  config: Pick<
    Config,
    "CLAIM_LEAD_MS" | "PREPARE_AHEAD_MS" | "RETRY_DELAYS_MS" | "DELIVERY_TIMEOUT_MS" | "RETRY_AFTER_MAX_MS"
  >;
  dispatcher: Dispatcher;
  /** Flows' limits and origins' health, before the dispatcher. */
  gate: Pick<FlowGate, "admit">;
  /** When outcome lines are written (bookkeeping.ts). */
  bookkeeping: Pick<Bookkeeping, "busy" | "afterSends">;
  logger: Logger;
  metrics: DeliveryMetrics;
  /** This worker's id in its claims, and what to do about another's delivery. */
  owners: DeliveryOwners;
  /** Where each job goes once this worker is done with it. */
  jobs: Pick<EventJobFeed, "complete" | "handBack" | "fail" | "forget">;
}

export interface EventProcessor {
  /** A job the feed took: its event is prepared, claimed and delivered. */
  take(job: HeldJob): void;
  /** The API announced a change of this event: a prepared copy reads it again. */
  changed(eventId: string): void;
  /** The feed could not renew these jobs' locks (Redis lost them): prepared copies are dropped. */
  lost(jobs: HeldJob[]): void;
  /**
   * Hands every job that is only waiting (prepared, or between retries) back to the queue; resolves
   * once the others have ended (claimed deliveries sent and recorded).
   */
  stop(): Promise<void>;
  /** Events held: prepared, claimed and waiting for the instant, in flight, or between retries. */
  readonly held: number;
  /** The earliest time a held event is claimed, sent or retried (epoch ms); undefined when none waits. */
  readonly nextInstant: number | undefined;
}

type Signal = EventSignal<EventDelivery>;

/** One held event: its job, its stage, and the wait its stage set. */
class HeldEvent {
  /** Calls off the wait for the stage's time (its claim or retry), while one is set. */
  stopWaiting: (() => void) | undefined = undefined;
  /** Later jobs of the same event taken while this one is held: each is taken once this one ends. */
  laterJobs: HeldJob[] | undefined = undefined;
  constructor(
    readonly job: HeldJob,
    public stage: EventStage<EventDelivery>,
  ) {}
}

const CHANGED: Signal = { kind: "changed" };
const LOST: Signal = { kind: "lost" };
const STOP: Signal = { kind: "stop" };
const DUE: Signal = { kind: "due" };
const toRead = (state: Extract<Signal, { kind: "read" }>["state"]): Signal => ({ kind: "read", state });
const toClaim = (answer: Extract<Signal, { kind: "claim" }>["answer"]): Signal => ({ kind: "claim", answer });
const toOwner = (decision: OwnerDecision): Signal => ({ kind: "owner", decision });
const toTakeover = (won: boolean): Signal => ({ kind: "takeover", won });

export function createEventProcessor(deps: EventProcessorDeps): EventProcessor {
  const { clock, config, dispatcher, bookkeeping, logger, metrics, owners, jobs } = deps;
  const held = new Map<string, HeldEvent>();
  let stopping = false;
  let drained: (() => void)[] = [];
  const context: StageContext = {
    get now() {
      return clock.now().getTime();
    },
    get stopping() {
      return stopping;
    },
    claimLeadMs: config.CLAIM_LEAD_MS,
    prepareAheadMs: config.PREPARE_AHEAD_MS,
  };
  const statements = createEventStatements({ db: deps.db, clock, config, workerId: owners.self });
  const attempts = createEventAttempts<HeldEvent>({
    clock,
    logger,
    dispatcher,
    gate: deps.gate,
    statements,
    recorder: createAttemptRecorder({ noun: "event", clock, config, logger, metrics, bookkeeping }),
    settled: (entry, settled) => signal(entry, { kind: "settled", retryAt: settled.retryAt }),
    failed: (entry, error) => signal(entry, { kind: "failed", error }),
    heldBack: (entry, at) => signal(entry, { kind: "heldBack", at }),
  });
  // Claim and retry times: one timer per instant however many events share it.
  const wakeUps = createInstantTimers<HeldEvent>((due) => {
    for (const entry of due) {
      entry.stopWaiting = undefined;
      signal(entry, DUE);
    }
  });

  function take(job: HeldJob) {
    const earlier = held.get(job.eventId);
    if (earlier) {
      // One job per event at a time in this worker: a second one (queued again after Redis lost the
      // first) waits for the first to end, then finds the event delivered or carries on.
      earlier.laterJobs ??= [];
      earlier.laterJobs.push(job);
      return;
    }
    const step = takenStep<EventDelivery>(context);
    const entry = new HeldEvent(job, step.stage);
    held.set(job.eventId, entry);
    apply(entry, step);
  }

  function signal(entry: HeldEvent, signal: Signal) {
    apply(entry, nextStage(entry.stage, signal, context));
  }

  function apply(entry: HeldEvent, step: EventStep<EventDelivery>) {
    entry.stage = step.stage;
    for (const effect of step.effects) run(entry, effect);
    if (step.stage.kind === "ended") end(entry, step.stage.how);
  }

  /** Signals the answer of `promise` to `entry` when it comes; a rejection is signalled as `failed`. */
  function answer<T>(entry: HeldEvent, promise: Promise<T>, toSignal: (value: T) => Signal) {
    promise.then(
      (value) => signal(entry, toSignal(value)),
      (error: unknown) => signal(entry, { kind: "failed", error }),
    );
  }

  function run(entry: HeldEvent, effect: EventEffect<EventDelivery>) {
    const { eventId } = entry.job;
    switch (effect.kind) {
      case "read":
        return answer(entry, statements.readState(eventId), toRead);
      case "claim":
        return answer(entry, statements.claim(eventId), toClaim);
      case "checkOwner":
        return answer(entry, owners.decide(effect.owner, effect.delivery.policy), toOwner);
      case "takeOver":
        return answer(entry, statements.takeOver(eventId, effect.owner), toTakeover);
      case "send":
        return attempts.send(entry, effect.delivery, effect.at, effect.currentSecrets);
      case "wait":
        entry.stopWaiting = wakeUps.at(effect.at, entry);
        return;
      case "stopWaiting":
        entry.stopWaiting?.();
        entry.stopWaiting = undefined;
        return;
      case "steppedAside":
        metrics.ownerDecision("stepped_aside");
        logger.debug(
          { eventId, owner: effect.owner.workerId, forMs: effect.forMs },
          "event delivered by another worker; its job is looked at again later",
        );
        return;
      case "tookOver":
        metrics.ownerDecision("taken_over");
        return;
      case "releaseClaim":
        // Not released (Postgres unreachable): the worker taking the job steps aside while this one
        // lives, then takes the delivery over at the time limit (owners.ts).
        statements
          .releaseClaim(eventId)
          .catch((error: unknown) => logger.warn({ err: error, eventId }, "could not release the claim of an event"));
        return;
    }
  }

  /** The one end of a held event: its job is finished as its stage says, and the event let go. */
  function end(entry: HeldEvent, how: JobEnd) {
    const { job } = entry;
    if (how.kind === "complete") jobs.complete(job);
    else if (how.kind === "handBack") jobs.handBack(job, how.at);
    else if (how.kind === "fail") jobs.fail(job, how.error instanceof Error ? how.error : new Error(String(how.error)));
    else jobs.forget(job);
    entry.stopWaiting?.();
    entry.stopWaiting = undefined;
    if (held.get(job.eventId) === entry) held.delete(job.eventId);
    if (entry.laterJobs) for (const later of entry.laterJobs) take(later);
    if (held.size === 0 && drained.length > 0) {
      const waiters = drained;
      drained = [];
      for (const resolve of waiters) resolve();
    }
  }

  return {
    take,
    changed(eventId) {
      const entry = held.get(eventId);
      if (entry) signal(entry, CHANGED);
    },
    lost(lostJobs) {
      for (const job of lostJobs) {
        const entry = held.get(job.eventId);
        if (!entry) continue;
        if (entry.job === job) {
          signal(entry, LOST);
          continue;
        }
        // A later job of a held event: it has not started, it only leaves the line.
        const later = entry.laterJobs;
        const at = later ? later.indexOf(job) : -1;
        if (!later || at < 0) continue;
        later.splice(at, 1);
        jobs.forget(job);
      }
    },
    stop() {
      stopping = true;
      for (const entry of [...held.values()]) signal(entry, STOP);
      if (held.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => drained.push(resolve));
    },
    get held() {
      return held.size;
    },
    get nextInstant() {
      const claimOrRetry = wakeUps.next();
      const send = attempts.next();
      if (claimOrRetry === undefined || send === undefined) return claimOrRetry ?? send;
      return Math.min(claimOrRetry, send);
    },
  };
}
