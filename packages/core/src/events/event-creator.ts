import { createHash } from "node:crypto";
import { type Db, isRefusedStatement, isUniqueViolation, Prisma, queryRows } from "@punctual/db";
import { createBatcher } from "../batcher.ts";
import type { DeliveryPolicy } from "../delivery-policy/policy.ts";
import { AppError } from "../errors.ts";
import { newId } from "../ids.ts";
import { policyColumn } from "../organizations/stored-delivery-policy.ts";
import { quotaNoticesSql } from "../outcomes/notices.ts";
import { EVENT_COLUMNS, type EventRecord, type EventRow, eventFromRow } from "./event-record.ts";
import { type Labels, labelsColumn } from "./labels.ts";
import { monthlyLimitReached, quotaMonth } from "./monthly-quota.ts";

// Creating events: each one is inserted Pending (contract §6) with a unit of its month's quota
// taken in the same statement (monthly-quota.ts), so concurrent creates can never pass the limit,
// and with the quota notices of the units it took (outcomes/notices.ts), so they commit together.
// An Idempotency-Key makes a repeat of the same request answer with the first event (§3).

export const IDEMPOTENCY_KEY_REUSED = "Idempotency-Key was already used with a different request";
const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

export interface NewEvent {
  orgId: string;
  payload: string;
  destination: string;
  scheduledTime: Date;
  idempotencyKey?: string | undefined;
  /**
   * The request's own delivery policy fields. The event stores them over its organization's
   * default, field by field (`mergeWithDefault`, done in the insert statement itself as jsonb
   * `default || own`: both hold only the fields that are set); NULL when both are empty.
   */
  deliveryPolicy?: DeliveryPolicy | undefined;
  /** The flow it belongs to (contract §10.2); none when absent. Stored as given, configured or not. */
  flowKey?: string | undefined;
  /** Told of the delivery's final outcome (outcomes/notices.ts); none when absent. */
  callbackUrl?: string | undefined;
  /** Its labels (contract §10.5); none when absent or empty. */
  labels?: Labels | undefined;
}

interface CreateEventResult {
  event: EventRecord;
  /** False when an earlier request with the same idempotency key already created it. */
  created: boolean;
}

/** A JSON value with the keys of every object sorted: the same value however its keys were ordered. */
function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sortedKeys((value as Record<string, unknown>)[key])]),
  );
}

/**
 * What makes two creates "the same request" (contract §3): the SHA-256 of the parsed input, so
 * that spellings of one instant (`…T10:00:00+02:00`, `…T08:00:00.000Z`) or key order in the body
 * do not matter, while any other difference in payload, destination, time, the request's own
 * delivery policy fields, its flow key or its labels does. A request without policy fields, flow key
 * or labels has the digest it had before they existed, so keys stored then still match their repeats.
 */
export function requestDigest(
  input: Pick<
    NewEvent,
    "payload" | "destination" | "scheduledTime" | "deliveryPolicy" | "flowKey" | "callbackUrl" | "labels"
  >,
): string {
  const parts: unknown[] = [input.payload, input.destination, input.scheduledTime.toISOString()];
  const hasPolicy = input.deliveryPolicy !== undefined && Object.keys(input.deliveryPolicy).length > 0;
  // `{}` stores no labels, as no field does: the same request.
  const hasLabels = input.labels !== undefined && Object.keys(input.labels).length > 0;
  // An empty policy stands in when only a flow key, a callback or labels are given, so the parts can
  // never be confused; each later part is an object named by its field.
  if (hasPolicy || input.flowKey !== undefined || input.callbackUrl !== undefined || hasLabels) {
    parts.push(sortedKeys(input.deliveryPolicy ?? {}));
  }
  if (input.flowKey !== undefined) parts.push({ flowKey: input.flowKey });
  if (input.callbackUrl !== undefined) parts.push({ callbackUrl: input.callbackUrl });
  if (hasLabels) parts.push({ labels: sortedKeys(input.labels) });
  return createHash("sha256").update(JSON.stringify(parts)).digest("hex");
}

/**
 * The stored policy of a new event of `orgId`, as SQL: the organization's default with the own
 * fields over it, NULL when neither has a field.
 */
const mergedPolicySql = (orgIdSql: Prisma.Sql, own: Prisma.Sql) => Prisma.sql`
  NULLIF(
    COALESCE((SELECT o.delivery_policy FROM organizations o WHERE o.id = ${orgIdSql}), '{}'::jsonb)
      || COALESCE(${own}, '{}'::jsonb),
    '{}'::jsonb
  )`;

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
 * Inserts a Pending event and takes one unit of its month's quota in a single statement, which also
 * writes the month's quota notices when the unit crosses a threshold. With an
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
        RETURNING org_id, month, count AS used
      ), notices AS (${quotaNoticesSql(Prisma.sql`SELECT * FROM quota`, { limit: monthlyLimit, now })})
      INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, idempotency_key, request_digest, created_at, updated_at, delivery_policy, flow_key, callback_url, labels)
      SELECT ${id}, ${input.orgId}, ${input.destination}, ${input.payload}, ${input.scheduledTime}, 'Pending', ${key ?? null}, ${key === undefined ? null : digest}, ${now}, ${now},
        ${mergedPolicySql(Prisma.sql`${input.orgId}`, Prisma.sql`${policyColumn(input.deliveryPolicy)}::jsonb`)}, ${input.flowKey ?? null}, ${input.callbackUrl ?? null}, ${labelsColumn(input.labels)}::jsonb
      FROM quota
      RETURNING ${EVENT_COLUMNS}`;
    if (!row) throw monthlyLimitReached(monthlyLimit, [month]);
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
  const rows = await queryRows<EventRow>(db, insertEventsSql(ids, items, monthlyLimit));
  return inOrder(ids, rows);
}

/** The inserted events in the order of `ids`; undefined for one that was not inserted. */
function inOrder(ids: string[], rows: EventRow[]): (EventRecord | undefined)[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    const row = byId.get(id);
    return row ? eventFromRow(row) : undefined;
  });
}

/** The latest "now" of the items: the time of the notices their statement writes. */
const latestOf = (items: QueuedCreate[]) =>
  new Date(items.reduce((latest, item) => Math.max(latest, item.now.getTime()), 0));

/**
 * The statement of `insertEvents`: one row per item, under the ids given, with the quota notices of
 * the months whose units it took (dated at the latest item's time).
 */
const insertEventsSql = (ids: string[], items: QueuedCreate[], monthlyLimit: number) => Prisma.sql`
    WITH input AS (
      SELECT * FROM unnest(
        ${ids}::text[],
        ${items.map((item) => item.input.orgId)}::text[],
        ${items.map((item) => item.input.destination)}::text[],
        ${items.map((item) => item.input.payload)}::text[],
        ${items.map((item) => item.input.scheduledTime)}::timestamptz[],
        ${items.map((item) => quotaMonth(item.input.scheduledTime))}::date[],
        ${items.map((item) => item.now)}::timestamptz[],
        ${items.map((item) => policyColumn(item.input.deliveryPolicy))}::text[],
        ${items.map((item) => item.input.flowKey ?? null)}::text[],
        ${items.map((item) => item.input.callbackUrl ?? null)}::text[],
        ${items.map((item) => labelsColumn(item.input.labels))}::text[]
      ) AS t(id, org_id, destination, payload, scheduled_time, month, now, policy, flow_key, callback_url, labels)
    ), wanted AS (
      SELECT org_id, month, count(*)::int AS n FROM input GROUP BY org_id, month
    ), quota AS (
      INSERT INTO event_monthly_usage AS usage (org_id, month, count)
      SELECT org_id, month, n FROM wanted WHERE n <= ${monthlyLimit}
      ORDER BY org_id, month
      ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + EXCLUDED.count
      WHERE usage.count + EXCLUDED.count <= ${monthlyLimit}
      RETURNING org_id, month, count AS used
    ), notices AS (${quotaNoticesSql(Prisma.sql`SELECT * FROM quota`, { limit: monthlyLimit, now: latestOf(items) })})
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, idempotency_key, created_at, updated_at, delivery_policy, flow_key, callback_url, labels)
    SELECT input.id, input.org_id, input.destination, input.payload, input.scheduled_time, 'Pending', NULL, input.now, input.now,
      ${mergedPolicySql(Prisma.sql`input.org_id`, Prisma.sql`input.policy::jsonb`)}, input.flow_key, input.callback_url, input.labels::jsonb
    FROM input JOIN quota USING (org_id, month)
    RETURNING ${EVENT_COLUMNS}`;

/** Most events one `createEventBatch` (POST /api/events/batch) creates. */
export const MAX_EVENT_BATCH = 1000;

/**
 * Creates the events of one organization all together or not at all (POST /api/events/batch): one
 * statement inserts them and takes their quota units (writing the notices of the months it crossed),
 * inside a transaction that is rolled back when any month has too few units left for all of its
 * events (403), so nothing of a refused batch stays: neither the units of the months that fitted nor
 * their notices.
 * Returns the events in the order given.
 */
export async function createEventBatch(
  db: Db,
  inputs: Omit<NewEvent, "idempotencyKey">[],
  now: Date,
  monthlyLimit: number,
): Promise<EventRecord[]> {
  if (inputs.length === 0) return [];
  const ids = inputs.map(() => newId("evt"));
  const items = inputs.map((input) => ({ input, now }));
  return db.$transaction(async (tx) => {
    const events = inOrder(ids, await tx.$queryRaw<EventRow[]>(insertEventsSql(ids, items, monthlyLimit)));
    const all = events.filter((event) => event !== undefined);
    if (all.length < ids.length) {
      // A month is given for all of its events or for none: the missing ones name the months short.
      const short = inputs.filter((_, n) => events[n] === undefined).map((input) => quotaMonth(input.scheduledTime));
      throw monthlyLimitReached(monthlyLimit, [...new Set(short)]);
    }
    return all;
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
