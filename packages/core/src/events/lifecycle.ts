import { createHash } from "node:crypto";
import { type Db, isRefusedStatement, isUniqueViolation, Prisma, queryRows } from "@punctual/db";
import { createBatcher } from "../batcher.ts";
import type { DeliveryOwner } from "../delivery-owner.ts";
import { AppError, badRequest, forbidden, notFound } from "../errors.ts";
import { newId } from "../ids.ts";
import { PREVIOUS_SECRET_WHILE_VALID } from "../organizations/previous-secret.ts";
import { EVENT_COLUMNS, type EventRecord, type EventRow, eventFromRow, quotaMonth } from "./event-record.ts";

// The only module that writes an event's `status` (contract §6). Every change is one conditional
// statement or one short transaction, so a cancel, a duplicate queue job or a second worker can
// never make an event both delivered and cancelled, or delivered twice by a claim.
//
//   Pending → Queued → Sent | Failed To Send      (worker)
//   Pending → Cancelled                            (client)
//   Pending → Failed To Queue                      (reconciler)
//
// Replays (replay.ts) only insert new Pending events beside their originals.
//
// The monthly quota (§3) is a counter row per organization and UTC month, changed in the same
// statement as the event, so concurrent creates can never pass the limit.

export const EVENT_NOT_FOUND = "Unable to find event";
export const ONLY_PENDING = "Only Pending events can be updated";
export const IDEMPOTENCY_KEY_REUSED = "Idempotency-Key was already used with a different request";
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

const monthlyLimitReached = (limit: number) =>
  forbidden(`Monthly limit of ${limit} scheduled events reached for this organization`);

export interface NewEvent {
  orgId: string;
  payload: string;
  destination: string;
  scheduledTime: Date;
  idempotencyKey?: string | undefined;
}

interface CreateEventResult {
  event: EventRecord;
  /** False when an earlier request with the same idempotency key already created it. */
  created: boolean;
}

/**
 * What makes two creates "the same request" (contract §3): the SHA-256 of the parsed input, so
 * that spellings of one instant (`…T10:00:00+02:00`, `…T08:00:00.000Z`) or key order in the body
 * do not matter, while any other difference in payload, destination or time does.
 */
export function requestDigest(input: Pick<NewEvent, "payload" | "destination" | "scheduledTime">): string {
  const canonical = JSON.stringify([input.payload, input.destination, input.scheduledTime.toISOString()]);
  return createHash("sha256").update(canonical).digest("hex");
}

/**
 * The event created within the last 24 hours with this key, if any. A repeat of a different
 * request is refused; an event stored before digests were kept (none) is taken as the same.
 */
async function findByIdempotencyKey(
  db: Db,
  orgId: string,
  key: string,
  digest: string,
  now: Date,
): Promise<EventRecord | undefined> {
  const since = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
  const [row] = await db.$queryRaw<(EventRow & { request_digest: string | null })[]>`
    SELECT ${EVENT_COLUMNS}, request_digest FROM events
    WHERE org_id = ${orgId} AND idempotency_key = ${key} AND created_at > ${since}`;
  if (!row) return undefined;
  if (row.request_digest !== null && row.request_digest !== digest) {
    throw new AppError("UNPROCESSABLE_CONTENT", IDEMPOTENCY_KEY_REUSED);
  }
  return eventFromRow(row);
}

/**
 * Inserts a Pending event and takes one unit of its month's quota in a single statement. With an
 * idempotency key, a repeat of the same request within 24 hours returns the first event and
 * changes nothing; a different request with that key is refused (422).
 */
export async function createEvent(
  db: Db,
  input: NewEvent,
  now: Date,
  monthlyLimit: number,
): Promise<CreateEventResult> {
  const key = input.idempotencyKey;
  const digest = requestDigest(input);
  if (key !== undefined) {
    const existing = await findByIdempotencyKey(db, input.orgId, key, digest, now);
    if (existing) return { event: existing, created: false };
    // A key older than the window may be used again: release it from the old event.
    const since = new Date(now.getTime() - IDEMPOTENCY_WINDOW_MS);
    await db.$executeRaw`
      UPDATE events SET idempotency_key = NULL, request_digest = NULL
      WHERE org_id = ${input.orgId} AND idempotency_key = ${key} AND created_at <= ${since}`;
  }
  const id = newId("evt");
  const month = quotaMonth(input.scheduledTime);
  try {
    const [row] = await db.$queryRaw<EventRow[]>`
      WITH quota AS (
        INSERT INTO event_monthly_usage AS usage (org_id, month, count)
        VALUES (${input.orgId}, ${month}::date, 1)
        ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + 1
        WHERE usage.count < ${monthlyLimit}
        RETURNING 1
      )
      INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, idempotency_key, request_digest, created_at, updated_at)
      SELECT ${id}, ${input.orgId}, ${input.destination}, ${input.payload}, ${input.scheduledTime}, 'Pending', ${key ?? null}, ${key === undefined ? null : digest}, ${now}, ${now}
      FROM quota
      RETURNING ${EVENT_COLUMNS}`;
    if (!row) throw monthlyLimitReached(monthlyLimit);
    return { event: eventFromRow(row), created: true };
  } catch (error) {
    // Two requests raced with the same idempotency key: the statement of the loser rolled back
    // whole (its quota unit too); answer with the winner's event.
    if (key !== undefined && isUniqueViolation(error)) {
      const existing = await findByIdempotencyKey(db, input.orgId, key, digest, now);
      if (existing) return { event: existing, created: false };
    }
    throw error;
  }
}

interface QueuedCreate {
  input: NewEvent;
  now: Date;
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

const settle = <T>(promise: Promise<T>): Promise<Settled<T>> =>
  promise.then(
    (value) => ({ ok: true, value }),
    (error: unknown) => ({ ok: false, error }),
  );

/**
 * Inserts Pending events (of any organizations) in one statement, taking their quota units per
 * organization and month. A month's units are taken only when all the events asking for it fit
 * under the limit; the events of a month that does not fit are not inserted (undefined in the
 * result). Usage rows are taken in (org, month) order, so two concurrent batches lock them in the
 * same order and cannot deadlock.
 */
async function insertEvents(db: Db, items: QueuedCreate[], monthlyLimit: number): Promise<(EventRecord | undefined)[]> {
  const ids = items.map(() => newId("evt"));
  const rows = await queryRows<EventRow>(
    db,
    Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(
        ${ids}::text[],
        ${items.map((item) => item.input.orgId)}::text[],
        ${items.map((item) => item.input.destination)}::text[],
        ${items.map((item) => item.input.payload)}::text[],
        ${items.map((item) => item.input.scheduledTime)}::timestamptz[],
        ${items.map((item) => quotaMonth(item.input.scheduledTime))}::date[],
        ${items.map((item) => item.now)}::timestamptz[]
      ) AS t(id, org_id, destination, payload, scheduled_time, month, now)
    ), wanted AS (
      SELECT org_id, month, count(*)::int AS n FROM input GROUP BY org_id, month
    ), quota AS (
      INSERT INTO event_monthly_usage AS usage (org_id, month, count)
      SELECT org_id, month, n FROM wanted WHERE n <= ${monthlyLimit}
      ORDER BY org_id, month
      ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + EXCLUDED.count
      WHERE usage.count + EXCLUDED.count <= ${monthlyLimit}
      RETURNING org_id, month
    )
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, idempotency_key, created_at, updated_at)
    SELECT input.id, input.org_id, input.destination, input.payload, input.scheduled_time, 'Pending', NULL, input.now, input.now
    FROM input JOIN quota USING (org_id, month)
    RETURNING ${EVENT_COLUMNS}`,
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    const row = byId.get(id);
    return row ? eventFromRow(row) : undefined;
  });
}

interface EventCreator {
  /** `createEvent`, answered exactly as it would be alone. */
  create(input: NewEvent, now: Date): Promise<CreateEventResult>;
}

/**
 * Creates events as `createEvent` does, but the creates without an idempotency key that arrive in
 * the same turn of the event loop share one statement (one round trip, one commit, one hold of
 * each quota row) instead of one each. Whatever that statement cannot settle for everyone (a month
 * with too few units left for all of its events, or a statement Postgres refused) is done again one
 * event at a time by `createEvent`, so each request still gets its own answer and the quota is
 * exact. The batch statement is atomic: when it fails, nothing of it was written.
 */
export function createEventCreator(db: Db, monthlyLimit: number): EventCreator {
  const batcher = createBatcher(async (items: QueuedCreate[]): Promise<Settled<CreateEventResult>[]> => {
    const alone = (item: QueuedCreate) => settle(createEvent(db, item.input, item.now, monthlyLimit));
    let inserted: (EventRecord | undefined)[];
    try {
      inserted = await insertEvents(db, items, monthlyLimit);
    } catch (error) {
      // Postgres refused the statement (one bad row fails them all): each on its own gets its own
      // answer. Otherwise (no connection, a timeout) each would fail alike, only later.
      if (items.length > 1 && isRefusedStatement(error)) return Promise.all(items.map(alone));
      return items.map(() => ({ ok: false as const, error }));
    }
    return Promise.all(
      items.map((item, n) => {
        const event = inserted[n];
        return event ? { ok: true as const, value: { event, created: true } } : alone(item);
      }),
    );
  });
  return {
    async create(input, now) {
      if (input.idempotencyKey !== undefined) return createEvent(db, input, now, monthlyLimit);
      const outcome = await batcher.run({ input, now });
      if (!outcome.ok) throw outcome.error;
      return outcome.value;
    },
  };
}

interface EventChanges {
  payload?: string | undefined;
  destination?: string | undefined;
  scheduledTime?: Date | undefined;
  cancel?: boolean | undefined;
}

/**
 * Applies a client's edit to a Pending event (contract §3 PUT). The event row is locked first, so a
 * worker's claim either happens before (the edit is refused: not Pending) or after (the claim sees
 * the edited or cancelled event). Moving an event to another month moves its quota unit; cancelling
 * gives the unit back.
 */
export async function updatePendingEvent(
  db: Db,
  orgId: string,
  eventId: string,
  changes: EventChanges,
  now: Date,
  monthlyLimit: number,
): Promise<EventRecord> {
  return db.$transaction(async (tx) => {
    const [current] = await tx.$queryRaw<EventRow[]>`
      SELECT ${EVENT_COLUMNS} FROM events WHERE id = ${eventId} AND org_id = ${orgId} FOR UPDATE`;
    if (!current) throw notFound(EVENT_NOT_FOUND);
    if (current.status !== "Pending") throw badRequest(ONLY_PENDING);

    const oldMonth = quotaMonth(current.scheduled_time);
    const scheduledTime = changes.scheduledTime ?? current.scheduled_time;
    const newMonth = quotaMonth(scheduledTime);
    if (changes.cancel) {
      await tx.$executeRaw`
        UPDATE event_monthly_usage SET count = count - 1
        WHERE org_id = ${orgId} AND month = ${oldMonth}::date AND count > 0`;
    } else if (newMonth !== oldMonth) {
      const taken = await tx.$queryRaw<unknown[]>`
        INSERT INTO event_monthly_usage AS usage (org_id, month, count)
        VALUES (${orgId}, ${newMonth}::date, 1)
        ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + 1
        WHERE usage.count < ${monthlyLimit}
        RETURNING 1`;
      if (taken.length === 0) throw monthlyLimitReached(monthlyLimit);
      await tx.$executeRaw`
        UPDATE event_monthly_usage SET count = count - 1
        WHERE org_id = ${orgId} AND month = ${oldMonth}::date AND count > 0`;
    }

    const [updated] = await tx.$queryRaw<EventRow[]>`
      UPDATE events SET
        payload = ${changes.payload ?? current.payload},
        destination = ${changes.destination ?? current.destination},
        scheduled_time = ${scheduledTime},
        status = ${changes.cancel ? "Cancelled" : "Pending"},
        updated_at = ${now}
      WHERE id = ${eventId} AND status = 'Pending'
      RETURNING ${EVENT_COLUMNS}`;
    if (!updated) throw new Error(`event ${eventId} changed while locked`);
    return eventFromRow(updated);
  });
}

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

/**
 * When each event's first attempt started, by event id (events without one are missing): the
 * lateness of a delivery another worker began, read for the deliveries ending together.
 */
export async function readFirstAttempts(db: Db, eventIds: string[]): Promise<Map<string, Date>> {
  const rows = await queryRows<{ event_id: string; at: Date }>(
    db,
    Prisma.sql`SELECT event_id, at FROM event_attempts WHERE event_id = ANY(${eventIds}::text[]) AND attempt = 1`,
  );
  return new Map(rows.map((row) => [row.event_id, row.at]));
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
}

const toClaimed = (row: ClaimRow): ClaimedEvent => ({
  id: row.id,
  orgId: row.org_id,
  destination: row.destination,
  payload: row.payload,
  scheduledTime: row.scheduled_time,
  signingSecret: row.signing_secret,
  previousSigningSecret: row.previous_signing_secret,
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
        ${PREVIOUS_SECRET_WHILE_VALID}, e.claimed_by, e.updated_at
    )
    SELECT claimed.*, true AS claimed FROM claimed
    UNION ALL
    SELECT e.id, e.org_id, e.destination, e.payload, e.scheduled_time, e.status, o.signing_secret,
      ${PREVIOUS_SECRET_WHILE_VALID}, e.claimed_by, e.updated_at, false
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

interface AttemptRecord {
  at: Date;
  responseStatus: number | null;
  durationMs: number;
  error: string | null;
}

export interface RecordedAttempt {
  /**
   * The attempt's number, 1 for the first; 0 when nothing was recorded because the delivery was no
   * longer Queued (another job of the same event had ended it), so this one must stop too.
   */
  attempt: number;
  /** The final status this attempt set, or null when the delivery goes on (a retry follows). */
  final: "Sent" | "Failed To Send" | null;
}

export interface AttemptOfEvent extends AttemptRecord {
  eventId: string;
  succeeded: boolean;
}

/**
 * The attempts as one JSON parameter: under a burst this runs for every batch of answers, and one
 * string costs the client far less than six arrays escaped element by element.
 */
function attemptsJson(attempts: AttemptOfEvent[]): string {
  return JSON.stringify(
    attempts.map((a) => ({
      event_id: a.eventId,
      at_ms: a.at.getTime(),
      response_status: a.responseStatus,
      duration_ms: Math.round(a.durationMs),
      error: a.error,
      succeeded: a.succeeded,
    })),
  );
}

/**
 * Records attempts of Queued events and, in the same statement, ends each delivery that succeeded
 * (`Queued → Sent` with `sentAt`) or whose attempt was number `maxAttempts` (`Queued → Failed To
 * Send` with `failedAt`). Attempts are numbered in Postgres, so a re-run job continues the count
 * instead of starting over. One statement (one commit) for the whole batch.
 * An attempt of an event that is no longer Queued is not recorded and answers attempt 0: a second
 * job delivering the same event (a worker that lost its lock) then stops instead of retrying an
 * ended delivery forever.
 */
export async function recordAttempts(
  db: Db,
  attempts: AttemptOfEvent[],
  maxAttempts: number,
): Promise<RecordedAttempt[]> {
  if (attempts.length === 0) return [];
  const rows = await queryRows<{ event_id: string; attempt: number; final: string | null }>(
    db,
    Prisma.sql`
    WITH input AS (
      SELECT event_id, to_timestamp(at_ms / 1000.0) AS at, response_status, duration_ms, error, succeeded
      FROM json_to_recordset(${attemptsJson(attempts)}::json)
        AS t(event_id text, at_ms bigint, response_status int, duration_ms int, error text, succeeded boolean)
    ), numbered AS (
      SELECT input.*, COALESCE((SELECT MAX(a.attempt) FROM event_attempts a WHERE a.event_id = input.event_id), 0) + 1 AS attempt,
        (SELECT e.status = 'Queued' FROM events e WHERE e.id = input.event_id) AS queued
      FROM input
    ), recorded AS (
      INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
      SELECT event_id, attempt, at, response_status, duration_ms, error FROM numbered WHERE queued
    ), finished AS (
      UPDATE events e SET
        status = CASE WHEN n.succeeded THEN 'Sent' ELSE 'Failed To Send' END,
        sent_at = CASE WHEN n.succeeded THEN n.at END,
        failed_at = CASE WHEN n.succeeded THEN NULL ELSE n.at END,
        updated_at = n.at
      FROM numbered n
      WHERE e.id = n.event_id AND e.status = 'Queued' AND (n.succeeded OR n.attempt >= ${maxAttempts})
      RETURNING e.id, e.status
    )
    SELECT n.event_id, CASE WHEN n.queued THEN n.attempt ELSE 0 END AS attempt, f.status AS final
    FROM numbered n LEFT JOIN finished f ON f.id = n.event_id`,
  );
  const byId = new Map(rows.map((row) => [row.event_id, row]));
  return attempts.map((attempt) => {
    const row = byId.get(attempt.eventId);
    if (!row) throw new Error(`attempt of event ${attempt.eventId} was not recorded`);
    return { attempt: row.attempt, final: row.final as RecordedAttempt["final"] };
  });
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
