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
 * One page of the organization's visible events, ordered by (scheduledTime, id) or the reverse: one statement
 * whose order and keyset condition match the index (org_id, scheduled_time, id), or with a flow
 * key (org_id, flow_key, scheduled_time, id), so a page costs an index range scan however deep it
 * is. With labels, the walk is over the first label's rows of event_labels, kept in that order
 * after the label (migration 20261201130000_event_list_indexes): a page reads its own rows (and the
 * events among them the other conditions refuse), not every event carrying the label. Start bounds
 * are inclusive, end bounds exclusive.
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
  const [label] = filter.labels ?? [];
  if (label !== undefined) return listLabelledEvents(db, orgId, label, filter, conditions, descending);
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

/**
 * The page of a label filter: the rows of `label` in event_labels from the cursor on, in the list's
 * order (their primary key), each event read by its id and kept when it meets `conditions` (which
 * test every label of the filter on the event itself).
 */
async function listLabelledEvents(
  db: Db,
  orgId: string,
  [key, value]: readonly [string, string],
  filter: EventListFilter,
  conditions: Prisma.Sql[],
  descending: boolean,
): Promise<EventRecord[]> {
  // The walk's own bounds, so that the scan starts and ends where the page can.
  const walk: Prisma.Sql[] = [
    Prisma.sql`l.org_id = ${orgId}`,
    Prisma.sql`l.key = ${key}`,
    Prisma.sql`l.value = ${value}`,
  ];
  if (filter.scheduledStartDate) walk.push(Prisma.sql`l.scheduled_time >= ${filter.scheduledStartDate}`);
  if (filter.scheduledEndDate) walk.push(Prisma.sql`l.scheduled_time < ${filter.scheduledEndDate}`);
  if (filter.after) {
    const after = Prisma.sql`(${filter.after.scheduledTime}::timestamptz, ${filter.after.id})`;
    walk.push(
      descending
        ? Prisma.sql`(l.scheduled_time, l.event_id) < ${after}`
        : Prisma.sql`(l.scheduled_time, l.event_id) > ${after}`,
    );
  }
  // Inside the lateral subquery the unqualified columns are the event's. OFFSET 0 keeps it a lookup
  // by id per row of the walk: flattened, the planner may prefer reading every event carrying the
  // label through the GIN index and sorting them, the cost this walk exists to avoid.
  const rows = await db.$queryRaw<EventRow[]>(Prisma.sql`
    SELECT e.* FROM event_labels l
    CROSS JOIN LATERAL (
      SELECT ${EVENT_COLUMNS} FROM events
      WHERE id = l.event_id AND ${Prisma.join(conditions, " AND ")}
      OFFSET 0
    ) e
    WHERE ${Prisma.join(walk, " AND ")}
    ORDER BY ${descending ? Prisma.sql`l.scheduled_time DESC, l.event_id DESC` : Prisma.sql`l.scheduled_time, l.event_id`}
    LIMIT ${filter.limit}`);
  return rows.map(eventFromRow);
}
