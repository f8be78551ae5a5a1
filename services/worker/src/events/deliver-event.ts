import {
  type AttemptOfEvent,
  buildDeliveryRequest,
  type ClaimedEvent,
  type ClaimResult,
  type Clock,
  type Config,
  claimEvents,
  createBatcher,
  type DeliveryOwner,
  type EventState,
  type Logger,
  readEventStates,
  readFirstAttempts,
  readSigningSecretsOf,
  recordAttempts,
  type Takeover,
  takeOverEvents,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import { createAttemptSettler, type SettledAttempt, type SettledDelivery } from "../delivery/attempt-settler.ts";
import { createInstantClock } from "../delivery/instants.ts";
import type { DeliveryOwners } from "../delivery/owners.ts";
import type { SendScheduler } from "../delivery/send-scheduler.ts";
import type { AttemptOutcome, DeliveryHttpRequest } from "../delivery/transport.ts";
import { originOf } from "../delivery/transport.ts";
import type { DeliveryMetrics } from "../metrics/worker-metrics.ts";
import type { EventJobFeed, HeldJob } from "./event-job-feed.ts";

// The life of an event's job in a worker (contract §6, "prepare early, claim late"):
//
//   prepare   The feed hands the job over PREPARE_AHEAD_MS before the event's time. The worker reads
//             the event's status and time (one statement for the jobs handed over together) and
//             holds it until its claim time; the event stays Pending, editable and cancellable. A
//             change announced by the API makes it read the event again.
//   claim     CLAIM_LEAD_MS before the time, every prepared event due then is claimed with one
//             conditional statement per batch (Pending → Queued, owned by this worker); only what
//             the claim returns is sent, with the payload and destination it returns. Its request
//             is signed now. An event found Queued already is taken over only from an owner that is
//             gone (owners.ts); while its owner delivers it, this copy of the job steps aside.
//   send      At the instant every request due then goes to the send scheduler in one pass.
//   record    Outcomes are written in batches, a few milliseconds behind the answers, with one
//             `info` line per final outcome (attempt-settler.ts); a retry waits in memory for its
//             time. The job completes once the worker's sends are quiet (event-job-feed.ts).
//
// Each held event is one small object moved from stage to stage by the answers of the batched
// statements and by timers shared per instant: no promise chain is kept per event while it waits,
// so a worker holds tens of thousands of prepared events in a few hundred bytes each.
//
// A stopping worker hands its prepared and retrying jobs back to the queue at once; a crashed one
// loses them to another worker when their locks run out. Either way the claim (or the takeover of
// a claim) is the only gate.

export interface EventProcessorDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "CLAIM_LEAD_MS" | "PREPARE_AHEAD_MS" | "RETRY_DELAYS_MS">;
  scheduler: SendScheduler;
  logger: Logger;
  metrics: DeliveryMetrics;
  /** This worker's id in its claims, and whether another's delivery may be taken over. */
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

/** Statements of the claim and of the outcome records carry up to this many events each. */
const BATCH_SIZE = 500;
const RECORD_STATEMENTS_AT_ONCE = 3;
/**
 * State reads, and claims, running at once (each kind). Jobs taken a few at a time (as they are
 * queued, or a burst larger than WORKER_PREPARED_JOBS taken as its first deliveries end) then wait
 * for a running statement and go together in the next, instead of a statement and a commit for
 * every few jobs: measured, 50,000 due at once went from p99 21.5 s with claims unbounded to 11 s.
 */
const STATEMENTS_AT_ONCE = 4;
/**
 * A job handed over this much earlier than PREPARE_AHEAD_MS allows (the event was moved later
 * after its job was queued) goes back to the queue instead of waiting in memory.
 */
const EARLY_SLACK_MS = 5_000;

/**
 * reading    its status and time are being read;
 * prepared   Pending, waiting for its claim time;
 * claiming   the claim is under way;
 * delivering claimed: waiting for its instant, in flight, or being recorded;
 * retrying   claimed, waiting for its next attempt's time.
 */
type Stage = "reading" | "prepared" | "claiming" | "delivering" | "retrying";

/** One held event: its job, where it stands, and once claimed what is sent. */
class HeldEvent {
  stage: Stage = "reading";
  /** A change was announced while the event was being read: read it again. */
  changed = false;
  /** The feed lost the job's lock before the claim: the queue's copy delivers the event, not this one. */
  lost = false;
  /** The time it waits for (its claim, instant or retry), ms since the epoch. */
  waitsFor = 0;
  /** Stops the wait for `waitsFor`, if any. */
  cancelWait: (() => void) | undefined = undefined;
  delivery: EventDelivery | undefined = undefined;
  /** Later jobs of the same event taken while this one is held: each carries on once it ends. */
  twins: HeldJob[] | undefined = undefined;
  constructor(
    readonly eventId: string,
    readonly job: HeldJob,
  ) {}
}

/** A claimed event: what its attempts send, and what the settler needs of it. */
class EventDelivery implements SettledDelivery {
  readonly ids: { eventId: string };
  readonly orgId: string;
  readonly dueAt: Date;
  firstAttemptAt: Date | undefined = undefined;
  readonly origin: string;
  signingSecret: string;
  previousSigningSecret: string | null;
  /** The next attempt's request, signed before its time. */
  request: DeliveryHttpRequest | undefined = undefined;
  constructor(
    readonly event: ClaimedEvent,
    /** Looks up the first attempt of a delivery another worker began. */
    readonly findFirstAttemptAt: () => Promise<Date | undefined>,
  ) {
    this.ids = { eventId: event.id };
    this.orgId = event.orgId;
    this.dueAt = event.scheduledTime;
    this.origin = originOf(event.destination);
    this.signingSecret = event.signingSecret;
    this.previousSigningSecret = event.previousSigningSecret;
  }
}

export function createEventProcessor(deps: EventProcessorDeps): EventProcessor {
  const { db, clock, config, scheduler, logger, metrics, owners, jobs } = deps;
  const maxAttempts = config.RETRY_DELAYS_MS.length + 1;
  const held = new Map<string, HeldEvent>();
  let stopping = false;
  let drained: (() => void)[] = [];

  /** Reads by id of one turn of the event loop (or while `maxConcurrent` run), one statement for all of them. */
  const lookUps = <T>(read: (db: Db, ids: string[]) => Promise<Map<string, T>>, maxConcurrent?: number) =>
    createBatcher(
      async (ids: string[]) => {
        const found = await read(db, ids);
        return ids.map((id) => found.get(id));
      },
      { maxBatchSize: BATCH_SIZE, maxConcurrent },
    );
  // Jobs handed over (or claims falling due) in the same turn of the event loop share one statement.
  const states = lookUps(readEventStates, STATEMENTS_AT_ONCE);
  const claims = createBatcher(
    (eventIds: string[]) => {
      const now = clock.now();
      return claimEvents(db, eventIds, new Date(now.getTime() + config.CLAIM_LEAD_MS), now, owners.self);
    },
    { maxBatchSize: BATCH_SIZE, maxConcurrent: STATEMENTS_AT_ONCE },
  );
  const takeovers = createBatcher(
    async (list: Takeover[]) => {
      const won = await takeOverEvents(db, list, owners.self, clock.now());
      return list.map((takeover) => won.has(takeover.eventId));
    },
    { maxBatchSize: BATCH_SIZE },
  );
  // Three record statements at a time: answers arriving meanwhile go together in the next one, so a
  // burst's records take a few large statements rather than many small ones queueing for the pool.
  const records = createBatcher((attempts: AttemptOfEvent[]) => recordAttempts(db, attempts, maxAttempts), {
    maxBatchSize: BATCH_SIZE,
    maxConcurrent: RECORD_STATEMENTS_AT_ONCE,
  });
  // A retry signs with the secrets of its own time: read for the retries due together.
  const secrets = lookUps(readSigningSecretsOf);
  // The first attempt of a delivery another worker began, for the lateness in its outcome line.
  const firstAttempts = lookUps(readFirstAttempts);
  const settler = createAttemptSettler({ noun: "event", clock, config, logger, metrics, scheduler });
  // Claim and retry times: one timer per instant however many events share it.
  const wakeUps = createInstantClock<HeldEvent>((due) => {
    for (const entry of due) wake(entry);
  });
  // Sends at the instant: every request due then is handed to the scheduler in one pass.
  const sendTimes = createInstantClock<HeldEvent>((due) => {
    for (const entry of due) submit(entry);
  });
  /** Attempts signed in this turn of the event loop for a later instant, by origin. */
  let comingByOrigin: Map<string, number> | undefined;

  function waitUntil(entry: HeldEvent, at: number, clockOf: typeof wakeUps) {
    entry.waitsFor = at;
    entry.cancelWait = clockOf.at(at, entry);
  }

  function stopWaiting(entry: HeldEvent) {
    entry.cancelWait?.();
    entry.cancelWait = undefined;
  }

  function take(job: HeldJob) {
    const earlier = held.get(job.eventId);
    if (earlier) {
      // One job per event at a time in this worker: a second one (queued again after Redis lost the
      // first) waits for the first to end, then finds the event delivered or carries on.
      earlier.twins ??= [];
      earlier.twins.push(job);
      return;
    }
    // Handed back as the queue would have handed it over: another worker prepares it at once.
    if (stopping) return jobs.handBack(job, Date.now());
    const entry = new HeldEvent(job.eventId, job);
    held.set(job.eventId, entry);
    read(entry);
  }

  function read(entry: HeldEvent) {
    entry.stage = "reading";
    entry.changed = false;
    states.run(entry.eventId).then(
      (state) => afterRead(entry, state),
      (error: unknown) => fail(entry, error),
    );
  }

  function afterRead(entry: HeldEvent, state: EventState | undefined) {
    // The queue lost this job (Redis flushed, say) and the reconciler queues the event again: that
    // new job delivers it, this copy must not claim it too.
    if (entry.lost) return forget(entry);
    if (!state || (state.status !== "Pending" && state.status !== "Queued")) return finish(entry);
    // Already Queued: its delivery resumes after a worker died.
    if (state.status === "Queued") return claim(entry);
    if (entry.changed) return read(entry);
    const due = state.scheduledTime.getTime();
    const claimAt = due - config.CLAIM_LEAD_MS;
    // Handed back as the queue would have handed it over: another worker prepares it at once.
    if (stopping) return handBack(entry, due - config.PREPARE_AHEAD_MS);
    // Moved later than the prepare window: the queue holds it until then, not this memory.
    if (claimAt - clock.now().getTime() > config.PREPARE_AHEAD_MS + EARLY_SLACK_MS) {
      return handBack(entry, due - config.PREPARE_AHEAD_MS);
    }
    entry.stage = "prepared";
    waitUntil(entry, claimAt, wakeUps);
  }

  function wake(entry: HeldEvent) {
    entry.cancelWait = undefined;
    if (entry.stage === "prepared") claim(entry);
    else if (entry.stage === "retrying") void retry(entry);
  }

  function claim(entry: HeldEvent) {
    entry.stage = "claiming";
    claims.run(entry.eventId).then(
      (result) => afterClaim(entry, result),
      (error: unknown) => fail(entry, error),
    );
  }

  function afterClaim(entry: HeldEvent, result: ClaimResult) {
    if (result.kind === "claimed") return deliver(entry, result.event);
    if (result.kind === "resumed") return resume(entry, result.event, result.owner);
    // Moved later between the read and the claim: prepare it again for its new time.
    if (result.kind === "not-due") return read(entry);
    finish(entry);
  }

  function deliver(entry: HeldEvent, event: ClaimedEvent) {
    entry.stage = "delivering";
    entry.delivery = new EventDelivery(event, () => firstAttempts.run(event.id));
    send(entry, event.scheduledTime.getTime());
  }

  /**
   * Already Queued: delivered on from here only once taken over from its owner. While the owner is
   * alive and delivering it, this copy of the job steps aside; when the takeover loses to a change
   * (another worker took it over, or the delivery ended), the event is read again.
   */
  function resume(entry: HeldEvent, event: ClaimedEvent, owner: DeliveryOwner) {
    void owners.holdLeftMs(owner).then((holdLeftMs) => {
      if (holdLeftMs > 0) return stepAside(entry, owner, holdLeftMs);
      takeovers.run({ eventId: event.id, from: owner }).then(
        (tookOver) => {
          if (!tookOver) return read(entry);
          if (owners.heldByAnother(owner)) metrics.ownerDecision("taken_over");
          deliver(entry, event);
        },
        (error: unknown) => fail(entry, error),
      );
    });
  }

  function stepAside(entry: HeldEvent, owner: DeliveryOwner, forMs: number) {
    metrics.ownerDecision("stepped_aside");
    logger.debug(
      { eventId: entry.eventId, owner: owner.workerId, forMs },
      "event delivered by another worker; its job is looked at again later",
    );
    handBack(entry, Date.now() + forMs);
  }

  /** Signs the attempt due at `due` now (its timestamp is the instant itself) and sends it then. */
  function send(entry: HeldEvent, due: number) {
    const delivery = entry.delivery as EventDelivery;
    const { event } = delivery;
    const request = buildDeliveryRequest({
      webhookId: event.id,
      payload: event.payload,
      scheduledTime: event.scheduledTime,
      signingSecret: delivery.signingSecret,
      previousSigningSecret: delivery.previousSigningSecret,
      now: new Date(Math.max(clock.now().getTime(), due)),
    });
    delivery.request = { url: event.destination, body: request.body, headers: request.headers };
    if (due <= Date.now()) return submit(entry);
    waitUntil(entry, due, sendTimes);
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
    for (const [origin, attempts] of coming ?? []) void scheduler.prepare(origin, attempts);
  }

  function submit(entry: HeldEvent) {
    entry.cancelWait = undefined;
    const delivery = entry.delivery as EventDelivery;
    const request = delivery.request as DeliveryHttpRequest;
    delivery.request = undefined;
    scheduler.submit(delivery.orgId, delivery.origin, request).then((outcome) => settle(entry, outcome));
  }

  function settle(entry: HeldEvent, outcome: AttemptOutcome) {
    const delivery = entry.delivery as EventDelivery;
    const attempt: AttemptOfEvent = {
      eventId: entry.eventId,
      at: outcome.startedAt,
      responseStatus: outcome.responseStatus,
      durationMs: outcome.durationMs,
      error: outcome.error,
      succeeded: outcome.ok,
    };
    settler
      .settle(delivery, outcome, () => records.run(attempt))
      .then(
        (settled) => afterAttempt(entry, settled),
        (error: unknown) => fail(entry, error),
      );
  }

  function afterAttempt(entry: HeldEvent, settled: SettledAttempt) {
    if (settled.retryAt === undefined) return finish(entry);
    // The retry waits here (the event stays Queued, the job held); a stopping worker hands it back.
    if (stopping) return handBack(entry, settled.retryAt);
    entry.stage = "retrying";
    waitUntil(entry, settled.retryAt, wakeUps);
  }

  async function retry(entry: HeldEvent) {
    entry.stage = "delivering";
    const delivery = entry.delivery as EventDelivery;
    // Signed with the secrets of its own time (a rotation or an ended overlap since the claim
    // applies), or with the claim's when they cannot be read: the retry goes out either way.
    const current = await secrets.run(delivery.orgId).catch((error: unknown) => {
      logger.warn(
        { err: error, eventId: entry.eventId },
        "could not read the signing secrets for a retry; using the claim's",
      );
      return undefined;
    });
    if (current) {
      delivery.signingSecret = current.signingSecret;
      delivery.previousSigningSecret = current.previousSigningSecret;
    }
    send(entry, entry.waitsFor);
  }

  /** The event needs nothing more: its job completes. */
  function finish(entry: HeldEvent) {
    jobs.complete(entry.job);
    end(entry);
  }

  /** The queue lost the job before the claim: this copy ends without a word to Redis. */
  function forget(entry: HeldEvent) {
    jobs.forget(entry.job);
    end(entry);
  }

  function handBack(entry: HeldEvent, at: number) {
    jobs.handBack(entry.job, at);
    end(entry);
  }

  /** A statement failed beyond its retries: BullMQ's retries of the job take over. */
  function fail(entry: HeldEvent, error: unknown) {
    jobs.fail(entry.job, error instanceof Error ? error : new Error(String(error)));
    end(entry);
  }

  function end(entry: HeldEvent) {
    stopWaiting(entry);
    if (held.get(entry.eventId) === entry) held.delete(entry.eventId);
    if (entry.twins) for (const twin of entry.twins) take(twin);
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
      if (entry?.stage === "prepared") {
        stopWaiting(entry);
        read(entry);
      } else if (entry?.stage === "reading") {
        entry.changed = true;
      }
      // Being claimed: the claim's conditions (Pending, due) judge the change. Claimed: the API
      // refuses to change a Queued event.
    },
    lost(lostJobs) {
      for (const job of lostJobs) {
        const entry = held.get(job.eventId);
        if (!entry) continue;
        if (entry.job !== job) {
          if (entry.twins?.includes(job)) {
            entry.twins = entry.twins.filter((twin) => twin !== job);
            jobs.forget(job);
          }
          continue;
        }
        // Claimed: the delivery is this worker's since its claim.
        if (entry.stage === "delivering" || entry.stage === "retrying") continue;
        entry.lost = true;
        if (entry.stage === "prepared") forget(entry);
      }
    },
    stop() {
      stopping = true;
      for (const entry of [...held.values()]) {
        if (entry.stage === "prepared") {
          // Handed back as the queue would have handed it over: another worker prepares it at once.
          handBack(entry, entry.waitsFor + config.CLAIM_LEAD_MS - config.PREPARE_AHEAD_MS);
        } else if (entry.stage === "retrying") {
          handBack(entry, entry.waitsFor);
        }
      }
      if (held.size === 0) return Promise.resolve();
      return new Promise<void>((resolve) => drained.push(resolve));
    },
    get held() {
      return held.size;
    },
    get nextInstant() {
      const claimOrRetry = wakeUps.next();
      const send = sendTimes.next();
      if (claimOrRetry === undefined || send === undefined) return claimOrRetry ?? send;
      return Math.min(claimOrRetry, send);
    },
  };
}
