import {
  type AttemptOfEvent,
  type ClaimedEvent,
  type ClaimResult,
  type Clock,
  type Config,
  claimEvents,
  createBatcher,
  type DeliveryOwner,
  type DeliveryPolicy,
  type EventState,
  type RecordedAttempt,
  type ResolvedDeliveryPolicy,
  readEventStates,
  readFirstAttempts,
  readSigningSecretsOf,
  recordAttempts,
  releaseClaims,
  resolvePolicy,
  type Takeover,
  takeOverEvents,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import { EventDelivery } from "./event-attempts.ts";
import type { ClaimAnswer } from "./event-stages.ts";

// Every statement a worker runs for the events it holds: the reads of their status and time, the
// claims, the takeovers, the records of attempts and the reads a retry or an outcome line needs.
// Each call is for one event; the calls of one turn of the event loop (a burst's jobs, claims or
// answers) go to Postgres as one statement (core/batcher.ts), up to BATCH_SIZE events each.

/** Statements carry up to this many events each. */
const BATCH_SIZE = 500;
/**
 * State reads, and claims, running at once (each kind). Jobs taken a few at a time (as they are
 * queued, or a burst larger than WORKER_PREPARED_JOBS taken as its first deliveries end) then wait
 * for a running statement and go together in the next, instead of a statement and a commit for
 * every few jobs (docs/decisions.md, "Event jobs are taken by a feed of the worker's own": the 50,000 burst).
 */
const STATEMENTS_AT_ONCE = 4;
/**
 * Record statements running at once: answers arriving meanwhile go together in the next one, so a
 * burst's records take a few large statements rather than many small ones queueing for the pool.
 */
const RECORD_STATEMENTS_AT_ONCE = 3;

export interface EventStatements {
  /** The event's status and time; undefined when it is gone. */
  readState(eventId: string): Promise<EventState | undefined>;
  /** Claims the event when it is Pending and due within CLAIM_LEAD_MS (`claimEvents`), recording this worker. */
  claim(eventId: string): Promise<ClaimAnswer<EventDelivery>>;
  /** Takes a Queued delivery over from `from`, if nothing changed since it was read (`takeOverEvents`). */
  takeOver(eventId: string, from: DeliveryOwner): Promise<boolean>;
  /** Records an attempt, and the final status it sets (`recordAttempts`). */
  record(attempt: AttemptOfEvent): Promise<RecordedAttempt>;
  /**
   * Lets go of this worker's claim of a Queued delivery whose retry waits in the queue
   * (`releaseClaims`): the worker that takes the job then takes the delivery over at once.
   */
  releaseClaim(eventId: string): Promise<void>;
  /** The organization's signing secrets now: a retry signs with the secrets of its own time. */
  signingSecrets(orgId: string): Promise<{ signingSecret: string; previousSigningSecret: string | null } | undefined>;
}

export interface EventStatementsDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "CLAIM_LEAD_MS" | "RETRY_DELAYS_MS" | "DELIVERY_TIMEOUT_MS">;
  /** This worker's id in its claims and takeovers (its heartbeat's). */
  workerId: string;
}

export function createEventStatements(deps: EventStatementsDeps): EventStatements {
  const { db, clock, config, workerId } = deps;
  // Shared by every delivery without a policy of its own (most of a burst): resolved once. The
  // claim hands the events that share a stored policy one object, resolved once here too.
  const deploymentPolicy = resolvePolicy(null, config);
  const resolved = new WeakMap<DeliveryPolicy, ResolvedDeliveryPolicy>();
  const policyOf = (stored: DeliveryPolicy | null): ResolvedDeliveryPolicy => {
    if (stored === null) return deploymentPolicy;
    let policy = resolved.get(stored);
    if (policy === undefined) {
      policy = resolvePolicy(stored, config);
      resolved.set(stored, policy);
    }
    return policy;
  };
  const deliveryOf = (event: ClaimedEvent) =>
    new EventDelivery(event, policyOf(event.deliveryPolicy), findFirstAttemptAt);

  /** Reads by id of one turn of the event loop (or while `maxConcurrent` run), one statement for all of them. */
  const lookUps = <T>(read: (db: Db, ids: string[]) => Promise<Map<string, T>>, maxConcurrent?: number) =>
    createBatcher(
      async (ids: string[]) => {
        const found = await read(db, ids);
        return ids.map((id) => found.get(id));
      },
      { maxBatchSize: BATCH_SIZE, maxConcurrent },
    );
  const states = lookUps(readEventStates, STATEMENTS_AT_ONCE);
  const secrets = lookUps(readSigningSecretsOf);
  // The first attempt of a delivery another worker began, for the lateness in its outcome line.
  const firstAttempts = lookUps(readFirstAttempts);
  const findFirstAttemptAt = (eventId: string) => firstAttempts.run(eventId);

  const answerOf = (result: ClaimResult): ClaimAnswer<EventDelivery> => {
    switch (result.kind) {
      case "claimed":
        return { kind: "claimed", delivery: deliveryOf(result.event) };
      case "resumed":
        return {
          kind: "resumed",
          delivery: deliveryOf(result.event),
          owner: result.owner,
        };
      case "not-due":
      case "finished":
        return { kind: result.kind };
    }
  };
  const claims = createBatcher(
    async (eventIds: string[]) => {
      const now = clock.now();
      const dueBy = new Date(now.getTime() + config.CLAIM_LEAD_MS);
      return (await claimEvents(db, eventIds, dueBy, now, workerId)).map(answerOf);
    },
    { maxBatchSize: BATCH_SIZE, maxConcurrent: STATEMENTS_AT_ONCE },
  );
  const takeovers = createBatcher(
    async (list: Takeover[]) => {
      const won = await takeOverEvents(db, list, workerId, clock.now());
      return list.map((takeover) => won.has(takeover.eventId));
    },
    { maxBatchSize: BATCH_SIZE },
  );
  const releases = createBatcher(
    async (eventIds: string[]) => {
      await releaseClaims(db, eventIds, workerId, clock.now());
      return eventIds.map(() => undefined);
    },
    { maxBatchSize: BATCH_SIZE },
  );
  const records = createBatcher((attempts: AttemptOfEvent[]) => recordAttempts(db, attempts), {
    maxBatchSize: BATCH_SIZE,
    maxConcurrent: RECORD_STATEMENTS_AT_ONCE,
  });

  return {
    readState: (eventId) => states.run(eventId),
    claim: (eventId) => claims.run(eventId),
    takeOver: (eventId, from) => takeovers.run({ eventId, from }),
    record: (attempt) => records.run(attempt),
    releaseClaim: (eventId) => releases.run(eventId),
    signingSecrets: (orgId) => secrets.run(orgId),
  };
}
