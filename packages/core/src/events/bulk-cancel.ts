import { type Db, Prisma } from "@punctual/db";
import { type EventFilter, eventFilterConditions } from "./event-filters.ts";

// Bulk cancel (POST /api/events/cancel, contract §10.5): every Pending event of an organization that
// matches the list filters becomes Cancelled, as a single cancel makes it (contract §6), and gives
// its month's quota unit back.
//
// It races with the workers' claims (`claimEvents`: one conditional UPDATE Pending → Queued) as a
// single cancel does: each event row is locked and changed only while it is still Pending, so an
// event ends claimed (and delivered) or cancelled, never both. The rows are taken FOR UPDATE SKIP
// LOCKED: a row a claim is changing right now is left to the claim (it is being delivered), and the
// cancel never waits on a claim, so the two can never deadlock however their rows interleave.

/** Most events one bulk cancel changes; a client with more asks again. */
export const MAX_BULK_CANCEL = 10_000;
/** Events cancelled per transaction: row locks held briefly, a claim never waits long. */
export const BULK_CANCEL_BATCH = 500;

/**
 * Cancels up to `MAX_BULK_CANCEL` of the organization's Pending events matching `filter`, oldest
 * `scheduledTime` first, in transactions of `batchSize`. `onBatch` is called after each commit
 * with the ids it cancelled (to take their jobs off the queue). Returns how many were cancelled.
 */
export async function cancelPendingEvents(
  db: Db,
  orgId: string,
  filter: EventFilter,
  now: Date,
  onBatch: (eventIds: string[]) => Promise<void>,
  options: { max?: number; batchSize?: number } = {},
): Promise<number> {
  const max = options.max ?? MAX_BULK_CANCEL;
  const batchSize = options.batchSize ?? BULK_CANCEL_BATCH;
  const conditions = [Prisma.sql`org_id = ${orgId}`, Prisma.sql`status = 'Pending'`, ...eventFilterConditions(filter)];
  let cancelled = 0;
  while (cancelled < max) {
    const size = Math.min(batchSize, max - cancelled);
    // One statement: lock the batch, cancel it (still Pending: the lock makes the guard exact) and
    // give each month its units back.
    const rows = await db.$queryRaw<{ id: string }[]>`
      WITH picked AS (
        SELECT id FROM events
        WHERE ${Prisma.join(conditions, " AND ")}
        ORDER BY scheduled_time, id
        LIMIT ${size}
        FOR UPDATE SKIP LOCKED
      ), cancelled AS (
        UPDATE events e SET status = 'Cancelled', updated_at = ${now}
        FROM picked WHERE e.id = picked.id AND e.status = 'Pending'
        RETURNING e.id, date_trunc('month', e.scheduled_time AT TIME ZONE 'UTC')::date AS month
      ), returned AS (
        UPDATE event_monthly_usage usage SET count = GREATEST(usage.count - back.n, 0)
        FROM (SELECT month, count(*)::int AS n FROM cancelled GROUP BY month) AS back
        WHERE usage.org_id = ${orgId} AND usage.month = back.month
        RETURNING 1
      )
      SELECT id FROM cancelled`;
    cancelled += rows.length;
    if (rows.length > 0) await onBatch(rows.map((row) => row.id));
    // A short batch: nothing more matches (rows a claim held are the claim's).
    if (rows.length < size) break;
  }
  return cancelled;
}
