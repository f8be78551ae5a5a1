import { type Db, Prisma } from "@punctual/db";
import { badRequest, notFound } from "../errors.ts";
import { newId } from "../ids.ts";
import { quotaNoticesSql } from "../outcomes/notices.ts";
import { EVENT_COLUMNS, EVENT_NOT_FOUND, type EventRecord, type EventRow, eventFromRow } from "./event-record.ts";
import { monthlyLimitReached, quotaMonth } from "./monthly-quota.ts";
import { type VisibilityWindow, visibleEventSql } from "./visibility.ts";

// Replay: a new Pending event with the payload, destination, delivery policy, flow and labels of an earlier one
// that was sent or failed, naming it in `replay_of`. Like a create it takes a unit of its month's quota, in the same
// statement that reads the original and inserts the copy, so neither a concurrent change of the
// original nor concurrent creates can slip between the check and the insert; that statement also
// writes the month's quota notices (outcomes/notices.ts). The original is never
// changed: its status and history stay as they were.

export const ONLY_SENT_OR_FAILED = "Only sent or failed events can be replayed";
/** Most events one bulk replay sends again. */
export const MAX_BULK_REPLAY = 1000;

/** Statuses an event may be replayed from: delivered, or given up on. */
const REPLAYABLE = ["Sent", "Failed To Send", "Failed To Queue"];
/** Statuses a bulk replay selects from: the failures only. */
export const BULK_REPLAYABLE = ["Failed To Send", "Failed To Queue"] as const;
export type BulkReplayableStatus = (typeof BULK_REPLAYABLE)[number];

interface ReplayRow extends Partial<EventRow> {
  source_status: string;
}

/**
 * Replays one event of the organization, due at `scheduledTime`. A missing, invisible (the getEvent
 * rule) or other organization's event is 404, one that is not Sent or Failed 400, a full month 403.
 */
export async function replayEvent(
  db: Db,
  input: { orgId: string; eventId: string; scheduledTime: Date },
  window: VisibilityWindow,
  monthlyLimit: number,
): Promise<EventRecord> {
  // Postgres text cannot hold NUL: such an id names no event.
  if (input.eventId.includes("\u0000")) throw notFound(EVENT_NOT_FOUND);
  const now = window.now;
  const [row] = await db.$queryRaw<ReplayRow[]>`
    WITH source AS (
      SELECT id, org_id, destination, payload, status, delivery_policy, flow_key, labels FROM events
      WHERE id = ${input.eventId} AND org_id = ${input.orgId} AND ${visibleEventSql(window)}
    ), quota AS (
      INSERT INTO event_monthly_usage AS usage (org_id, month, count)
      SELECT org_id, ${quotaMonth(input.scheduledTime)}::date, 1 FROM source WHERE status = ANY(${REPLAYABLE}::text[])
      ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + 1
      WHERE usage.count < ${monthlyLimit}
      RETURNING org_id, month, count AS used
    ), notices AS (${quotaNoticesSql(Prisma.sql`SELECT * FROM quota`, { limit: monthlyLimit, now })}
    ), replay AS (
      INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, replay_of, created_at, updated_at, delivery_policy, flow_key, labels)
      SELECT ${newId("evt")}, source.org_id, source.destination, source.payload, ${input.scheduledTime}, 'Pending', source.id, ${now}, ${now}, source.delivery_policy, source.flow_key, source.labels
      FROM source CROSS JOIN quota
      RETURNING ${EVENT_COLUMNS}
    )
    SELECT source.status AS source_status, replay.* FROM source LEFT JOIN replay ON true`;
  if (!row) throw notFound(EVENT_NOT_FOUND);
  if (row.id == null) {
    throw REPLAYABLE.includes(row.source_status)
      ? monthlyLimitReached(monthlyLimit, [quotaMonth(input.scheduledTime)])
      : badRequest(ONLY_SENT_OR_FAILED);
  }
  return eventFromRow(row as EventRow);
}

/** Which failed events a bulk replay selects: the list filters of GET /api/events. */
export interface BulkReplayFilter {
  statuses: readonly BulkReplayableStatus[];
  scheduledStartDate?: Date | undefined;
  scheduledEndDate?: Date | undefined;
  sentAtStartDate?: Date | undefined;
  sentAtEndDate?: Date | undefined;
  failedAtStartDate?: Date | undefined;
  failedAtEndDate?: Date | undefined;
}

/**
 * Replays up to MAX_BULK_REPLAY of the organization's visible failed events that match `filter`
 * and were not replayed before, oldest scheduledTime first, all due at `scheduledTime`. The
 * replays are all made or none: when the month has too few units left for every one of them, none
 * is made (403). Returns the new events in the order of their originals.
 *
 * "Not replayed before" makes a repeated bulk replay (a double click, a retried request) send
 * nothing twice, and lets a replay that failed in turn be selected by the next one. Bulk replays of
 * one organization take turns (a transaction-scoped advisory lock), so the second of two concurrent
 * ones sees the replays of the first.
 */
export async function replayFailedEvents(
  db: Db,
  orgId: string,
  filter: BulkReplayFilter,
  scheduledTime: Date,
  window: VisibilityWindow,
  monthlyLimit: number,
): Promise<EventRecord[]> {
  const conditions: Prisma.Sql[] = [
    Prisma.sql`e.org_id = ${orgId}`,
    visibleEventSql(window),
    Prisma.sql`e.status = ANY(${[...filter.statuses]}::text[])`,
    Prisma.sql`NOT EXISTS (SELECT 1 FROM events r WHERE r.replay_of = e.id)`,
  ];
  if (filter.scheduledStartDate) conditions.push(Prisma.sql`e.scheduled_time >= ${filter.scheduledStartDate}`);
  if (filter.scheduledEndDate) conditions.push(Prisma.sql`e.scheduled_time < ${filter.scheduledEndDate}`);
  if (filter.sentAtStartDate) conditions.push(Prisma.sql`e.sent_at >= ${filter.sentAtStartDate}`);
  if (filter.sentAtEndDate) conditions.push(Prisma.sql`e.sent_at < ${filter.sentAtEndDate}`);
  if (filter.failedAtStartDate) conditions.push(Prisma.sql`e.failed_at >= ${filter.failedAtStartDate}`);
  if (filter.failedAtEndDate) conditions.push(Prisma.sql`e.failed_at < ${filter.failedAtEndDate}`);
  const ids = Array.from({ length: MAX_BULK_REPLAY }, () => newId("evt"));
  const now = window.now;

  const rows = await db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`punctual:bulk-replay:${orgId}`}, 0))::text`;
    // A statement of its own after the lock: its snapshot sees the replays committed by the turn before.
    return tx.$queryRaw<(Partial<EventRow> & { matched: number })[]>`
      WITH source AS (
        SELECT e.id, e.org_id, e.destination, e.payload, e.delivery_policy, e.flow_key, e.labels, row_number() OVER (ORDER BY e.scheduled_time, e.id) AS n
        FROM events e
        WHERE ${Prisma.join(conditions, " AND ")}
        ORDER BY e.scheduled_time, e.id
        LIMIT ${MAX_BULK_REPLAY}
      ), new_ids AS (
        SELECT new_id, n FROM unnest(${ids}::text[]) WITH ORDINALITY AS t(new_id, n)
      ), quota AS (
        INSERT INTO event_monthly_usage AS usage (org_id, month, count)
        SELECT ${orgId}, ${quotaMonth(scheduledTime)}::date, count(*) FROM source
        HAVING count(*) > 0 AND count(*) <= ${monthlyLimit}
        ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + EXCLUDED.count
        WHERE usage.count + EXCLUDED.count <= ${monthlyLimit}
        RETURNING org_id, month, count AS used
      ), notices AS (${quotaNoticesSql(Prisma.sql`SELECT * FROM quota`, { limit: monthlyLimit, now })}
      ), replay AS (
        INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, replay_of, created_at, updated_at, delivery_policy, flow_key, labels)
        SELECT new_ids.new_id, source.org_id, source.destination, source.payload, ${scheduledTime}, 'Pending', source.id, ${now}, ${now}, source.delivery_policy, source.flow_key, source.labels
        FROM source JOIN new_ids USING (n) CROSS JOIN quota
        RETURNING ${EVENT_COLUMNS}
      )
      SELECT (SELECT count(*)::int FROM source) AS matched, replay.* FROM (SELECT 1) AS one LEFT JOIN replay ON true`;
  });
  const matched = rows[0]?.matched ?? 0;
  const replays = rows.filter((row) => row.id != null).map((row) => eventFromRow(row as EventRow));
  if (replays.length < matched) throw monthlyLimitReached(monthlyLimit, [quotaMonth(scheduledTime)]);
  // The ids were handed out in the originals' order.
  const order = new Map(ids.map((id, n) => [id, n]));
  return replays.sort((a, b) => (order.get(a.id) ?? 0) - (order.get(b.id) ?? 0));
}
