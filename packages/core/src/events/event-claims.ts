import { type Db, Prisma, queryRows } from "@punctual/db";
import type { DeliveryOwner } from "../delivery-owner.ts";
import type { DeliveryPolicy } from "../delivery-policy/policy.ts";
import { PREVIOUS_SECRET_WHILE_VALID } from "../organizations/previous-secret.ts";

// A due Pending event leaves Pending here (contract §6): a worker claims it (Pending → Queued) or
// takes over the claim of a worker that is gone, and the reconciler fails one that could not be
// queued in time (Pending → Failed To Queue). Each change is one conditional statement, so a
// cancel, a duplicate queue job or a second worker can never make an event delivered twice by a
// claim. The delivery then ends in attempt-records.ts.

/** Where an event stands, as a worker preparing its job needs it. */
export interface EventState {
  status: string;
  scheduledTime: Date;
}

/**
 * The status and time of many events in one round trip (a worker preparing the jobs handed to it
 * together). A read only: the prepared copy is a hint, the claim decides.
 */
export async function readEventStates(db: Db, eventIds: string[]): Promise<Map<string, EventState>> {
  const rows = await queryRows<{ id: string; status: string; scheduled_time: Date }>(
    db,
    Prisma.sql`SELECT id, status, scheduled_time FROM events WHERE id = ANY(${eventIds}::text[])`,
  );
  return new Map(rows.map((row) => [row.id, { status: row.status, scheduledTime: row.scheduled_time }]));
}

/** What a delivery worker needs to send an event, loaded with its claim in one round trip. */
export interface ClaimedEvent {
  id: string;
  orgId: string;
  destination: string;
  payload: string;
  scheduledTime: Date;
  signingSecret: string;
  /** The secret the last rotation replaced, while its overlap lasts; null otherwise. */
  previousSigningSecret: string | null;
  /** Its delivery policy as stored (contract §10.1); null: the deployment's defaults. */
  deliveryPolicy: DeliveryPolicy | null;
  /** The flow whose limits its attempts wait for (contract §10.2); null: none. */
  flowKey: string | null;
  /** Attempts already recorded: 0 when claimed now, more for a delivery resumed after its retry. */
  attemptsMade: number;
}

export type ClaimResult =
  /** Pending → Queued now: this worker delivers it. */
  | { kind: "claimed"; event: ClaimedEvent }
  /**
   * Already Queued: a worker claimed it before (a retry handed back, or a re-run of its job after a
   * worker died or lost its lock). Delivered on only once taken over from `owner` (takeOverEvents).
   */
  | { kind: "resumed"; event: ClaimedEvent; owner: DeliveryOwner }
  /** Still Pending but due later than `dueBy` (it was rescheduled): run again at `scheduledTime`. */
  | { kind: "not-due"; scheduledTime: Date }
  /** Cancelled, already final, or gone: nothing to do. */
  | { kind: "finished" };

interface ClaimRow {
  id: string;
  org_id: string;
  destination: string;
  payload: string;
  scheduled_time: Date;
  status: string;
  signing_secret: string;
  previous_signing_secret: string | null;
  claimed_by: string | null;
  updated_at: Date;
  /** As text: the same policy of many events is parsed once (storedPolicyOf). */
  delivery_policy: string | null;
  flow_key: string | null;
  attempts_made: number;
}

/** Distinct stored policies kept parsed; a burst's events mostly share a few (their organizations'). */
const PARSED_POLICIES_KEPT = 1_000;
const parsedPolicies = new Map<string, DeliveryPolicy>();

/**
 * A stored policy from its text, parsed once per distinct text: the events of a burst that share a
 * policy share one object (and the worker then resolves it once).
 */
function storedPolicyOf(text: string): DeliveryPolicy {
  let policy = parsedPolicies.get(text);
  if (policy === undefined) {
    if (parsedPolicies.size >= PARSED_POLICIES_KEPT) parsedPolicies.clear();
    policy = JSON.parse(text) as DeliveryPolicy;
    parsedPolicies.set(text, policy);
  }
  return policy;
}

const toClaimed = (row: ClaimRow): ClaimedEvent => ({
  id: row.id,
  orgId: row.org_id,
  destination: row.destination,
  payload: row.payload,
  scheduledTime: row.scheduled_time,
  signingSecret: row.signing_secret,
  previousSigningSecret: row.previous_signing_secret,
  deliveryPolicy: row.delivery_policy === null ? null : storedPolicyOf(row.delivery_policy),
  flowKey: row.flow_key,
  attemptsMade: row.attempts_made,
});

/**
 * Claims due events for delivery: `Pending → Queued` when their time is at most `dueBy` (the claim
 * lead lets a worker prepare before the instant). One conditional UPDATE decides for the whole
 * batch, so two workers or a duplicate job can never both claim an event; the same statement reads
 * the others, so a batch costs one round trip.
 */
export async function claimEvents(
  db: Db,
  eventIds: string[],
  dueBy: Date,
  now: Date,
  workerId: string,
): Promise<ClaimResult[]> {
  // Straight on the pool (queryRows): under a burst this runs for every batch of jobs, and Prisma's
  // own handling of each returned row costs more than the statement.
  const rows = await queryRows<ClaimRow & { claimed: boolean }>(
    db,
    Prisma.sql`
    WITH claimed AS (
      UPDATE events e SET status = 'Queued', claimed_by = ${workerId}, updated_at = ${now}
      FROM organizations o
      WHERE e.id = ANY(${eventIds}::text[]) AND e.status = 'Pending' AND e.scheduled_time <= ${dueBy}
        AND o.id = e.org_id
      RETURNING e.id, e.org_id, e.destination, e.payload, e.scheduled_time, e.status, o.signing_secret,
        ${PREVIOUS_SECRET_WHILE_VALID}, e.claimed_by, e.updated_at, e.delivery_policy::text, e.flow_key, 0 AS attempts_made
    )
    SELECT claimed.*, true AS claimed FROM claimed
    UNION ALL
    SELECT e.id, e.org_id, e.destination, e.payload, e.scheduled_time, e.status, o.signing_secret,
      ${PREVIOUS_SECRET_WHILE_VALID}, e.claimed_by, e.updated_at, e.delivery_policy::text, e.flow_key,
      CASE WHEN e.status = 'Queued'
        THEN COALESCE((SELECT MAX(a.attempt) FROM event_attempts a WHERE a.event_id = e.id), 0) ELSE 0 END, false
    FROM events e JOIN organizations o ON o.id = e.org_id
    WHERE e.id = ANY(${eventIds}::text[]) AND e.id NOT IN (SELECT id FROM claimed)`,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return eventIds.map((id): ClaimResult => {
    const row = byId.get(id);
    if (!row) return { kind: "finished" };
    if (row.claimed) return { kind: "claimed", event: toClaimed(row) };
    // Read with the statement's snapshot: the rows this statement did not claim, as they were.
    if (row.status === "Queued") {
      return { kind: "resumed", event: toClaimed(row), owner: { workerId: row.claimed_by, since: row.updated_at } };
    }
    if (row.status === "Pending") return { kind: "not-due", scheduledTime: row.scheduled_time };
    return { kind: "finished" };
  });
}

/** A delivery to take over: the event, and its owner as the claim that found it Queued read it. */
export interface Takeover {
  eventId: string;
  from: DeliveryOwner;
}

/**
 * Makes `workerId` the owner of Queued deliveries whose owner is gone, each only if nothing changed
 * since `from` was read (same owner, same `updated_at`): of two workers taking over one delivery at
 * once, one wins. Returns the ids taken over.
 */
export async function takeOverEvents(db: Db, takeovers: Takeover[], workerId: string, now: Date): Promise<Set<string>> {
  if (takeovers.length === 0) return new Set();
  const rows = await queryRows<{ id: string }>(
    db,
    Prisma.sql`
    UPDATE events e SET claimed_by = ${workerId}, updated_at = ${now}
    FROM unnest(${takeovers.map((t) => t.eventId)}::text[], ${takeovers.map((t) => t.from.workerId)}::text[],
      ${takeovers.map((t) => t.from.since.toISOString())}::timestamptz[]) AS t(id, owner, since)
    WHERE e.id = t.id AND e.status = 'Queued' AND e.claimed_by IS NOT DISTINCT FROM t.owner
      AND e.updated_at = t.since
    RETURNING e.id`,
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * Lets go of `workerId`'s claim of Queued deliveries whose next attempt waits in the queue (a retry
 * later than the prepare window, or a receiver's Retry-After): the worker that takes the job at the
 * retry's time finds no owner and takes the delivery over at once (owners.ts in the worker).
 */
export async function releaseClaims(db: Db, eventIds: string[], workerId: string, now: Date): Promise<void> {
  if (eventIds.length === 0) return;
  await queryRows(
    db,
    Prisma.sql`
    UPDATE events SET claimed_by = NULL, updated_at = ${now}
    WHERE id = ANY(${eventIds}::text[]) AND status = 'Queued' AND claimed_by = ${workerId}`,
  );
}

/**
 * Pending events that could not be put on the queue in time (scheduledTime + grace has passed)
 * become `Failed To Queue`. Returns the ids changed.
 */
export async function failUnqueuedEvents(db: Db, ids: string[], overdueBefore: Date, now: Date): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await db.$queryRaw<{ id: string }[]>`
    UPDATE events SET status = 'Failed To Queue', failed_at = ${now}, updated_at = ${now}
    WHERE id = ANY(${ids}::text[]) AND status = 'Pending' AND scheduled_time < ${overdueBefore}
    RETURNING id`;
  return rows.map((row) => row.id);
}
