import { quotaMonth } from "@punctual/core";
import { type Db, Prisma, queryRows } from "@punctual/db";
import { BUCKET_MS, type Stats, type StatsBucket } from "./schemas.ts";

// The statistics of GET /api/stats, computed in Postgres from the delivery history: a few
// statements, each scoped to the organization inside its WHERE and each served by an index range
// of the window, run side by side on the pool. Empty buckets are filled in here.

export interface StatsWindow {
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  bucket: StatsBucket;
}

/** Buckets start on UTC hours and UTC midnights: date_bin counts from this instant. */
const BUCKET_ORIGIN = new Date("2000-01-01T00:00:00.000Z");
/**
 * How long before the window an event may have been due and still count in the window's lateness.
 * A first attempt later than this (a Pending event is Failed To Queue once QUEUE_GRACE_MS, 1 h by
 * default, has passed) is left out, so that the statement reads the events due around the window,
 * not all of the organization's.
 */
export const LATENESS_LOOKBACK_MS = 6 * 60 * 60 * 1000;
/** A first attempt starts at its event's time (after the claim lead); this margin covers clock skew. */
const EARLY_ATTEMPT_MARGIN_MS = 60_000;
/** Most destinations listed. */
export const FAILING_DESTINATIONS_LIMIT = 5;

interface OutcomeRow {
  start: Date;
  sent: number;
  failed: number;
  retried: number;
}

interface LatenessRow {
  start: Date;
  p50: number;
  p99: number;
}

interface DestinationRow {
  destination: string;
  failures: number;
  last_error: string | null;
}

/** `date_bin` of a column into the window's buckets. */
const binned = (window: StatsWindow, column: Prisma.Sql) =>
  Prisma.sql`date_bin(${BUCKET_MS[window.bucket]} * interval '1 millisecond', ${column}, ${BUCKET_ORIGIN}::timestamptz)`;

/**
 * Final outcomes and retried attempts per bucket. An event's outcome is its `sent_at` or
 * `failed_at` (Failed To Send and Failed To Queue alike); a cron run's is its `finished_at`. A
 * failed event attempt followed by another counts at its own time; a cron run keeps only its count
 * of attempts, so its retries count when it finished.
 */
function outcomes(db: Db, orgId: string, window: StatsWindow): Promise<OutcomeRow[]> {
  const { from, to } = window;
  return queryRows<OutcomeRow>(
    db,
    Prisma.sql`
    SELECT start, sum(sent)::int AS sent, sum(failed)::int AS failed, sum(retried)::int AS retried FROM (
      SELECT ${binned(window, Prisma.sql`sent_at`)} AS start, count(*) AS sent, 0 AS failed, 0 AS retried
      FROM events WHERE org_id = ${orgId} AND sent_at >= ${from} AND sent_at < ${to}
      GROUP BY 1
      UNION ALL
      SELECT ${binned(window, Prisma.sql`failed_at`)}, 0, count(*), 0
      FROM events WHERE org_id = ${orgId} AND failed_at >= ${from} AND failed_at < ${to}
      GROUP BY 1
      UNION ALL
      SELECT ${binned(window, Prisma.sql`finished_at`)},
             count(*) FILTER (WHERE status = 'Sent'), count(*) FILTER (WHERE status = 'Failed To Send'),
             sum(greatest(attempts - 1, 0))
      FROM cron_runs
      WHERE org_id = ${orgId} AND status IN ('Sent', 'Failed To Send') AND finished_at >= ${from} AND finished_at < ${to}
      GROUP BY 1
      UNION ALL
      SELECT ${binned(window, Prisma.sql`a.at`)}, 0, 0, count(*)
      FROM event_attempts a JOIN events e ON e.id = a.event_id
      WHERE a.error IS NOT NULL AND a.at >= ${from} AND a.at < ${to} AND e.org_id = ${orgId}
        -- A look-up per failed attempt (they are few): the planner would otherwise hash every attempt.
        AND a.attempt < (SELECT max(n.attempt) FROM event_attempts n WHERE n.event_id = a.event_id)
      GROUP BY 1
    ) AS counted
    GROUP BY start`,
  );
}

/**
 * p50 and p99 (observed values, percentile_disc) of the lateness of the first attempts made in
 * each bucket: the attempt's start minus the event's scheduledTime, in ms. The events side reads
 * only the organization's events due around the window (index-only on org_id, scheduled_time, id).
 */
function lateness(db: Db, orgId: string, window: StatsWindow): Promise<LatenessRow[]> {
  const { from, to } = window;
  const dueFrom = new Date(from.getTime() - LATENESS_LOOKBACK_MS);
  const dueTo = new Date(to.getTime() + EARLY_ATTEMPT_MARGIN_MS);
  return queryRows<LatenessRow>(
    db,
    Prisma.sql`
    SELECT start,
           (extract(epoch FROM percentile_disc(0.5) WITHIN GROUP (ORDER BY lateness)) * 1000)::float8 AS p50,
           (extract(epoch FROM percentile_disc(0.99) WITHIN GROUP (ORDER BY lateness)) * 1000)::float8 AS p99
    FROM (
      -- Intervals, converted to ms only once per bucket: far cheaper than per attempt.
      SELECT ${binned(window, Prisma.sql`a.at`)} AS start, a.at - e.scheduled_time AS lateness
      FROM event_attempts a JOIN events e ON e.id = a.event_id
      WHERE a.attempt = 1 AND a.at >= ${from} AND a.at < ${to}
        AND e.org_id = ${orgId} AND e.scheduled_time >= ${dueFrom} AND e.scheduled_time < ${dueTo}
    ) AS first_attempts
    GROUP BY start`,
  );
}

/**
 * The destinations with the most failed attempts in the window, with the latest error. A cron
 * run's failed attempts (all of them when it failed, all but the last when it was sent) count when
 * it finished, with its error.
 */
function failingDestinations(db: Db, orgId: string, window: StatsWindow): Promise<DestinationRow[]> {
  const { from, to } = window;
  return queryRows<DestinationRow>(
    db,
    Prisma.sql`
    SELECT destination, sum(failures)::int AS failures,
           (array_agg(error ORDER BY at DESC) FILTER (WHERE error IS NOT NULL))[1] AS last_error
    FROM (
      SELECT e.destination, a.at, a.error, 1 AS failures
      FROM event_attempts a JOIN events e ON e.id = a.event_id
      WHERE a.error IS NOT NULL AND a.at >= ${from} AND a.at < ${to} AND e.org_id = ${orgId}
      UNION ALL
      SELECT j.destination, r.finished_at, r.error, r.attempts - CASE WHEN r.status = 'Sent' THEN 1 ELSE 0 END
      FROM cron_runs r JOIN cron_jobs j ON j.id = r.cron_job_id
      WHERE r.org_id = ${orgId} AND r.status IN ('Sent', 'Failed To Send')
        AND r.finished_at >= ${from} AND r.finished_at < ${to}
        AND r.attempts > CASE WHEN r.status = 'Sent' THEN 1 ELSE 0 END
    ) AS failed
    GROUP BY destination
    ORDER BY failures DESC, max(at) DESC, destination
    LIMIT ${FAILING_DESTINATIONS_LIMIT}`,
  );
}

async function usedThisMonth(db: Db, orgId: string, month: string): Promise<number> {
  const [row] = await queryRows<{ count: number }>(
    db,
    Prisma.sql`SELECT count FROM event_monthly_usage WHERE org_id = ${orgId} AND month = ${month}::date`,
  );
  return row?.count ?? 0;
}

/** The start of the bucket holding `at`. */
const bucketStart = (at: Date, bucket: StatsBucket) => {
  const size = BUCKET_MS[bucket];
  return Math.floor((at.getTime() - BUCKET_ORIGIN.getTime()) / size) * size + BUCKET_ORIGIN.getTime();
};

/**
 * The organization's statistics over the window: every bucket (the first and last may be only
 * partly inside it; only what happened inside counts), totals, this UTC month's usage and the
 * destinations failing most.
 */
export async function loadStats(
  db: Db,
  orgId: string,
  window: StatsWindow,
  usage: { now: Date; monthlyLimit: number },
): Promise<Stats> {
  const month = quotaMonth(usage.now);
  const [outcomeRows, latenessRows, destinationRows, used] = await Promise.all([
    outcomes(db, orgId, window),
    lateness(db, orgId, window),
    failingDestinations(db, orgId, window),
    usedThisMonth(db, orgId, month),
  ]);
  const outcomeAt = new Map(outcomeRows.map((row) => [row.start.getTime(), row]));
  const latenessAt = new Map(latenessRows.map((row) => [row.start.getTime(), row]));
  const buckets: Stats["buckets"] = [];
  const totals = { sent: 0, failed: 0, retried: 0 };
  const size = BUCKET_MS[window.bucket];
  for (let start = bucketStart(window.from, window.bucket); start < window.to.getTime(); start += size) {
    const counted = outcomeAt.get(start);
    const late = latenessAt.get(start);
    const bucket = {
      start: new Date(start).toISOString(),
      sent: counted?.sent ?? 0,
      failed: counted?.failed ?? 0,
      retried: counted?.retried ?? 0,
      latenessMs: { p50: late?.p50 ?? null, p99: late?.p99 ?? null },
    };
    totals.sent += bucket.sent;
    totals.failed += bucket.failed;
    totals.retried += bucket.retried;
    buckets.push(bucket);
  }
  return {
    from: window.from.toISOString(),
    to: window.to.toISOString(),
    bucket: window.bucket,
    buckets,
    totals,
    usage: { month: month.slice(0, 7), used, limit: usage.monthlyLimit },
    failingDestinations: destinationRows.map((row) => ({
      destination: row.destination,
      failures: row.failures,
      lastError: row.last_error,
    })),
  };
}
