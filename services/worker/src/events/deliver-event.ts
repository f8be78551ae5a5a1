import {
  type AttemptOfEvent,
  buildDeliveryRequest,
  type ClaimedEvent,
  type ClaimResult,
  type Clock,
  type Config,
  claimEvents,
  createBatcher,
  type EventJobData,
  type EventState,
  type Logger,
  readEventStates,
  readSigningSecrets,
  recordAttempts,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job } from "bullmq";
import { createAttemptSettler, type SettledDelivery } from "../delivery/attempt-settler.ts";
import { createInstantClock } from "../delivery/instants.ts";
import { runJobAgainAt } from "../delivery/retry.ts";
import type { SendScheduler } from "../delivery/send-scheduler.ts";
import { originOf } from "../delivery/transport.ts";
import type { DeliveryMetrics } from "../metrics/worker-metrics.ts";

// The life of an event's job in a worker (contract §6, "prepare early, claim late"):
//
//   prepare   BullMQ hands the job over PREPARE_AHEAD_MS before the event's time. The worker reads
//             the event's status and time (one statement for the jobs handed over together) and
//             holds the job in memory; the event stays Pending, editable and cancellable. A change
//             announced by the API makes it read the event again.
//   claim     CLAIM_LEAD_MS before the time, every prepared event due then is claimed with one
//             conditional statement per batch (Pending → Queued); only what the claim returns is
//             sent, with the payload and destination it returns. Its request is signed now.
//   send      At the instant every request due then goes to the send scheduler in one pass.
//   record    Outcomes are written in batches, a few milliseconds behind the answers, with one
//             `info` line per final outcome (attempt-settler.ts); a retry waits in memory for its
//             time. The job completes once the worker has no attempt waiting, so BullMQ's
//             bookkeeping stays off the burst's path.
//
// A stopping worker hands its prepared and retrying jobs back to the queue at once; a crashed one
// loses them to another worker when their lock expires. Either way the claim is the only gate.

export interface EventProcessorDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "CLAIM_LEAD_MS" | "PREPARE_AHEAD_MS" | "RETRY_DELAYS_MS">;
  scheduler: SendScheduler;
  logger: Logger;
  metrics: DeliveryMetrics;
}

export interface EventProcessor {
  process(job: Job<EventJobData>, token?: string): Promise<void>;
  /** The API announced a change of this event: a prepared copy reads it again. */
  changed(eventId: string): void;
  /** BullMQ could not renew these jobs' locks (Redis lost them): prepared copies are dropped. */
  lost(jobIds: string[]): void;
  /** Hands every job that is only waiting (prepared, or between retries) back to the queue. */
  stop(): void;
  /** Jobs held: prepared, claimed and waiting for the instant, in flight, or between retries. */
  readonly held: number;
}

/** Statements of the claim and of the outcome records carry up to this many events each. */
const BATCH_SIZE = 500;
const RECORD_STATEMENTS_AT_ONCE = 3;
/**
 * A job handed over this much earlier than PREPARE_AHEAD_MS allows (the event was moved later
 * after its job was queued) goes back to the queue instead of waiting in memory.
 */
const EARLY_SLACK_MS = 5_000;

type Wake = "time" | "changed" | "stopping" | "lost";

/** One held job, waiting for its claim or retry time. */
interface Held {
  eventId: string;
  /** Settles when this job's processing of the event ends. */
  done: Promise<void>;
  /** Set when BullMQ could not renew the job's lock: the queue no longer knows this copy. */
  lost: boolean;
  /** Claimed: announced changes no longer concern it (the API refuses to change a Queued event). */
  claimed: boolean;
  /** Set when a change was announced while the event was being read: read it again. */
  changed: boolean;
  wake: ((reason: Wake) => void) | undefined;
  cancelWait: (() => void) | undefined;
}

/** When an event's first attempt started, from its history (for a delivery another worker began). */
async function findFirstAttemptAt(db: Db, eventId: string): Promise<Date | undefined> {
  const first = await db.eventAttempt.findUnique({
    where: { eventId_attempt: { eventId, attempt: 1 } },
    select: { at: true },
  });
  return first?.at;
}

export function createEventProcessor(deps: EventProcessorDeps): EventProcessor {
  const { db, clock, config, scheduler, logger, metrics } = deps;
  const maxAttempts = config.RETRY_DELAYS_MS.length + 1;
  const held = new Map<string, Held>();
  /** The same entries by BullMQ job id, for lost locks. */
  const jobsOfEvents = new Map<string, Held>();
  let stopping = false;

  // Jobs handed over (or claims falling due) in the same turn of the event loop share one statement.
  const states = createBatcher(
    async (eventIds: string[]) => {
      const found = await readEventStates(db, eventIds);
      return eventIds.map((id) => found.get(id));
    },
    { maxBatchSize: BATCH_SIZE },
  );
  const claims = createBatcher(
    (eventIds: string[]) => {
      const now = clock.now();
      return claimEvents(db, eventIds, new Date(now.getTime() + config.CLAIM_LEAD_MS), now);
    },
    { maxBatchSize: BATCH_SIZE },
  );
  // Three record statements at a time: answers arriving meanwhile go together in the next one, so a
  // burst's records take a few large statements rather than many small ones queueing for the pool.
  const records = createBatcher((attempts: AttemptOfEvent[]) => recordAttempts(db, attempts, maxAttempts), {
    maxBatchSize: BATCH_SIZE,
    maxConcurrent: RECORD_STATEMENTS_AT_ONCE,
  });
  const settler = createAttemptSettler({ noun: "event", clock, config, logger, metrics, scheduler });
  // Waits for claim and retry times; one timer per instant however many jobs share it.
  const wakeUps = createInstantClock<Held>((due) => {
    for (const entry of due) entry.wake?.("time");
  });
  // Sends at the instant: every request due then is handed to the scheduler in one pass.
  const sendTimes = createInstantClock<() => void>((due) => {
    for (const send of due) send();
  });

  /** Waits until `at` (epoch ms), an announced change, or the worker stopping. */
  function waitUntil(entry: Held, at: number): Promise<Wake> {
    if (stopping) return Promise.resolve("stopping");
    if (entry.lost) return Promise.resolve("lost");
    if (entry.changed) return Promise.resolve("changed");
    return new Promise<Wake>((resolve) => {
      entry.cancelWait = wakeUps.at(at, entry);
      entry.wake = (reason) => {
        entry.cancelWait?.();
        entry.wake = undefined;
        entry.cancelWait = undefined;
        resolve(reason);
      };
    });
  }

  const sendAt = (instant: number) =>
    new Promise<void>((resolve) => {
      if (instant <= Date.now()) resolve();
      else sendTimes.at(instant, resolve);
    });

  /**
   * Holds a Pending event's job until its claim time, reading the event again on each announced
   * change; returns the claim, or undefined when the job is done (cancelled, final) or went back
   * to the queue.
   */
  async function prepareAndClaim(job: Job<EventJobData>, entry: Held, token?: string): Promise<ClaimResult> {
    for (;;) {
      entry.changed = false;
      const state: EventState | undefined = await states.run(entry.eventId);
      if (!state || (state.status !== "Pending" && state.status !== "Queued")) return { kind: "finished" };
      if (state.status === "Pending") {
        const due = state.scheduledTime.getTime();
        const claimAt = due - config.CLAIM_LEAD_MS;
        if (claimAt - clock.now().getTime() > config.PREPARE_AHEAD_MS + EARLY_SLACK_MS) {
          // Moved later than the prepare window: the queue holds it until then, not this memory.
          return runJobAgainAt(job, due - config.PREPARE_AHEAD_MS, token);
        }
        const woke = await waitUntil(entry, claimAt);
        if (woke === "changed") continue;
        // The queue lost this job (Redis flushed, say) and the reconciler queues the event again:
        // that new job delivers it, this copy must not claim it too.
        if (woke === "lost") return { kind: "finished" };
        // Handed back as the queue would have handed it over: another worker prepares it at once.
        if (woke === "stopping") return runJobAgainAt(job, due - config.PREPARE_AHEAD_MS, token);
      }
      // Due for its claim, or already Queued (its delivery resumes after a worker died).
      const claim = await claims.run(entry.eventId);
      // Moved later between the read and the claim: prepare it again for its new time.
      if (claim.kind === "not-due") continue;
      return claim;
    }
  }

  /** Sends the claimed event's attempts until one succeeds or the last one fails. */
  async function deliver(job: Job<EventJobData>, entry: Held, event: ClaimedEvent, token?: string): Promise<void> {
    entry.claimed = true;
    entry.changed = false;
    const origin = originOf(event.destination);
    const delivery: SettledDelivery = {
      ids: { eventId: event.id },
      orgId: event.orgId,
      dueAt: event.scheduledTime,
      firstAttemptAt: undefined,
      // A delivery resumed after another worker: its first attempt is in the history.
      findFirstAttemptAt: () => findFirstAttemptAt(db, event.id),
    };
    let due = event.scheduledTime.getTime();
    let secrets = { signingSecret: event.signingSecret, previousSigningSecret: event.previousSigningSecret };
    for (;;) {
      // Signed before the instant; the signature's timestamp is the instant itself.
      const request = buildDeliveryRequest({
        webhookId: event.id,
        payload: event.payload,
        scheduledTime: event.scheduledTime,
        ...secrets,
        now: new Date(Math.max(clock.now().getTime(), due)),
      });
      await sendAt(due);
      const outcome = await scheduler.submit(event.orgId, origin, {
        url: event.destination,
        body: request.body,
        headers: request.headers,
      });
      const attempt = {
        eventId: event.id,
        at: outcome.startedAt,
        responseStatus: outcome.responseStatus,
        durationMs: outcome.durationMs,
        error: outcome.error,
        succeeded: outcome.ok,
      };
      const settled = await settler.settle(delivery, outcome, () => records.run(attempt));
      if (settled.retryAt === undefined) return;
      due = settled.retryAt;
      // The retry waits here (the event stays Queued, the job held); a stopping worker hands it back.
      // A lost lock changes nothing now: the delivery is this worker's since its claim.
      entry.lost = false;
      if ((await waitUntil(entry, due)) === "stopping") return runJobAgainAt(job, due, token);
      // Signed with the secrets of its own time (a rotation or an ended overlap since the claim
      // applies), or with the claim's when they cannot be read: the retry goes out either way.
      const current = await readSigningSecrets(db, event.orgId).catch((error: unknown) => {
        logger.warn(
          { err: error, eventId: event.id },
          "could not read the signing secrets for a retry; using the claim's",
        );
        return undefined;
      });
      secrets = current ?? secrets;
    }
  }

  return {
    async process(job, token) {
      const { eventId } = job.data;
      // One job per event at a time in this worker: a second one (re-queued after Redis lost the
      // first) waits for the first to finish, then finds the event delivered or carries on.
      for (let earlier = held.get(eventId); earlier; earlier = held.get(eventId)) await earlier.done;
      let finish = () => {};
      // Registered before the first read, so a change announced during it is not missed.
      const entry: Held = {
        eventId,
        done: new Promise<void>((resolve) => {
          finish = resolve;
        }),
        lost: false,
        claimed: false,
        changed: false,
        wake: undefined,
        cancelWait: undefined,
      };
      const jobId = job.id ?? eventId;
      held.set(eventId, entry);
      jobsOfEvents.set(jobId, entry);
      try {
        const claim = await prepareAndClaim(job, entry, token);
        if (claim.kind === "claimed" || claim.kind === "resumed") await deliver(job, entry, claim.event, token);
      } finally {
        entry.cancelWait?.();
        held.delete(eventId);
        if (jobsOfEvents.get(jobId) === entry) jobsOfEvents.delete(jobId);
        finish();
      }
      // BullMQ's completion (a script per job) waits for a quiet moment: after a burst, not during it.
      await scheduler.whenQuiet();
    },
    lost(jobIds) {
      for (const id of jobIds) {
        const entry = jobsOfEvents.get(id);
        if (!entry || entry.claimed) continue;
        entry.lost = true;
        entry.wake?.("lost");
      }
    },
    changed(eventId) {
      const entry = held.get(eventId);
      if (!entry || entry.claimed) return;
      entry.changed = true;
      entry.wake?.("changed");
    },
    stop() {
      stopping = true;
      for (const entry of held.values()) entry.wake?.("stopping");
    },
    get held() {
      return held.size;
    },
  };
}
