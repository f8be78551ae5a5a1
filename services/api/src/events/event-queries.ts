import {
  EVENT_COLUMNS,
  type EventFilter,
  type EventRecord,
  type EventRow,
  eventFilterConditions,
  eventFromRow,
  searchWindowStart,
  type VisibilityWindow,
  visibleEventSql,
} from "@punctual/core";
import { type Db, Prisma } from "@punctual/db";
import type { ListCursor } from "./schemas.ts";

// Read queries of the events API. Every query is scoped to the caller's organization inside its
// WHERE, and applies the visibility rule of contract §3 (visibleEventSql, shared with replay), so an
// invisible event, a missing one and another organization's are indistinguishable.

export { searchWindowStart, type VisibilityWindow };

/** The organization's event with this id, if it is visible now. */
export async function findVisibleEvent(
  db: Db,
  orgId: string,
  eventId: string,
  window: VisibilityWindow,
): Promise<EventRecord | undefined> {
  // An id with NUL names no event, and Postgres would refuse the text outright (a 500).
  if (eventId.includes("\u0000")) return undefined;
  const [row] = await db.$queryRaw<EventRow[]>(Prisma.sql`
    SELECT ${EVENT_COLUMNS} FROM events
    WHERE id = ${eventId} AND org_id = ${orgId} AND ${visibleEventSql(window)}`);
  return row ? eventFromRow(row) : undefined;
}

/** One delivery attempt as `history` shows it. */
export interface AttemptView {
  attempt: number;
  at: string;
  responseStatus: number | null;
  responseBody: string | null;
  durationMs: number;
  error: string | null;
}

interface AttemptRow {
  attempt: number;
  at: Date;
  response_status: number | null;
  response_body: string | null;
  duration_ms: number;
  error: string | null;
}

/** The event's delivery attempts since `since`, oldest first. */
export async function findRecentAttempts(db: Db, eventId: string, since: Date): Promise<AttemptView[]> {
  const rows = await db.$queryRaw<AttemptRow[]>(Prisma.sql`
    SELECT attempt, at, response_status, response_body, duration_ms, error FROM event_attempts
    WHERE event_id = ${eventId} AND at >= ${since}
    ORDER BY at, attempt`);
  return rows.map((row) => ({
    attempt: row.attempt,
    at: row.at.toISOString(),
    responseStatus: row.response_status,
    responseBody: row.response_body,
    durationMs: row.duration_ms,
    error: row.error,
  }));
}

export interface EventListFilter extends EventFilter {
  /** Only events after this (scheduledTime, id) in the list's order. */
  after?: ListCursor | undefined;
  /** Newest first when "desc"; oldest first otherwise. */
  order?: "asc" | "desc" | undefined;
  limit: number;
}

/**
 * One page of the organization's visible events, ordered by (scheduledTime, id), or the reverse: one
 * statement whose order and keyset condition match the index (org_id, scheduled_time, id), or with a
 * flow key (org_id, flow_key, scheduled_time, id), so a page costs an index range scan however deep
 * it is. Start bounds are inclusive, end bounds exclusive.
 */
export async function listVisibleEvents(
  db: Db,
  orgId: string,
  filter: EventListFilter,
  window: VisibilityWindow,
): Promise<EventRecord[]> {
  const conditions: Prisma.Sql[] = [
    Prisma.sql`org_id = ${orgId}`,
    visibleEventSql(window),
    ...eventFilterConditions(filter),
  ];
  // Newest first reads the same index backwards.
  const descending = filter.order === "desc";
  if (filter.after) {
    const after = Prisma.sql`(${filter.after.scheduledTime}::timestamptz, ${filter.after.id})`;
    conditions.push(
      descending ? Prisma.sql`(scheduled_time, id) < ${after}` : Prisma.sql`(scheduled_time, id) > ${after}`,
    );
  }
  const order = descending ? Prisma.sql`scheduled_time DESC, id DESC` : Prisma.sql`scheduled_time, id`;
  const rows = await db.$queryRaw<EventRow[]>(Prisma.sql`
    SELECT ${EVENT_COLUMNS} FROM events
    WHERE ${Prisma.join(conditions, " AND ")}
    ORDER BY ${order}
    LIMIT ${filter.limit}`);
  return rows.map(eventFromRow);
}
