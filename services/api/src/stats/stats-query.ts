import { quotaMonth } from "@punctual/core";
import { type Db, Prisma } from "@punctual/db";
import { BUCKET_MS, type Stats, type StatsBucket } from "./schemas.ts";

// The statistics of GET /api/stats, computed in Postgres from the delivery history: two
// statements, each scoped to the organization inside its WHERE and each reading index ranges that
// start with the organization, run side by side on the pool: what they read does not grow with
// other organizations' deliveries. Empty buckets are filled in here.
//
// The bulk of a window is its events sent at the first attempt. For those the attempt time is the
// event's `sent_at`, so their lateness comes from the events index (org_id, sent_at,
// scheduled_time) alone, without reading a single attempt. Attempts are read only where that is
// not true, and those are few: failed first attempts (whose lateness is added) and successful
// retries (whose `sent_at` is not a first attempt: taken out again). Those attempts carry their
// event's organization (`org_id`, filled by a trigger for failed attempts and retries only) and are
// read from partial indexes on (org_id, at). Percentiles are then taken from that histogram of
// (bucket, lateness) counts.
//
// Hour buckets that can no longer change are kept by the caller (stats-cache.ts) and not asked for
// again: a request then computes only the hours it has not seen and the ones still open.

export interface StatsWindow {
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
  bucket: StatsBucket;
}

/** Buckets start on UTC hours and UTC midnights: date_bin counts from this instant. */
const BUCKET_ORIGIN = new Date("2000-01-01T00:00:00.000Z");
/** Most destinations listed. */
export const FAILING_DESTINATIONS_LIMIT = 5;

interface SentRow {
  start: Date;
  sent: number | null;
  p50: number | null;
  p99: number | null;
}

/** `date_bin` of a column into the window's buckets. */
const binned = (window: StatsWindow, column: Prisma.Sql) =>
  Prisma.sql`date_bin(${BUCKET_MS[window.bucket]} * interval '1 millisecond', ${column}, ${BUCKET_ORIGIN}::timestamptz)`;

/**
 * Runs one statement without JIT compilation. The statements look up events one failed attempt at
 * a time (forced on purpose, see below), which the planner prices high enough to JIT-compile them:
 * that compilation alone would take longer than the whole statement.
 */
async function query<T>(db: Db, statement: Prisma.Sql): Promise<T[]> {
  const [, rows] = await db.$transaction([db.$executeRaw`SET LOCAL jit = off`, db.$queryRaw<T[]>(statement)]);
  return rows;
}

/**
 * Events sent per bucket and the p50/p99 (nearest rank, an observed value) of the lateness of the
 * first attempts made in each bucket: the attempt's start minus the event's scheduledTime. The
 * event of an attempt is looked up one attempt at a time (LATERAL … LIMIT 1): a join would let the
 * planner hash the whole events table for a few thousand attempts.
 */
function sentAndLateness(orgId: string, window: StatsWindow): Prisma.Sql {
  const { from, to } = window;
  const dueOf = Prisma.sql`LATERAL (SELECT e.scheduled_time FROM events e WHERE e.id = a.event_id AND e.org_id = ${orgId} LIMIT 1) AS e`;
  return Prisma.sql`
    WITH sent AS (
      SELECT ${binned(window, Prisma.sql`sent_at`)} AS start, sent_at - scheduled_time AS lateness, count(*) AS n
      FROM events WHERE org_id = ${orgId} AND sent_at >= ${from} AND sent_at < ${to}
      GROUP BY 1, 2
    ), corrections AS (
      SELECT a.at, a.at - e.scheduled_time AS lateness, -1 AS n
      FROM event_attempts a CROSS JOIN ${dueOf}
      WHERE a.org_id = ${orgId} AND a.attempt > 1 AND a.error IS NULL AND a.at >= ${from} AND a.at < ${to}
      UNION ALL
      SELECT a.at, a.at - e.scheduled_time, 1
      FROM event_attempts a CROSS JOIN ${dueOf}
      WHERE a.org_id = ${orgId} AND a.attempt = 1 AND a.error IS NOT NULL AND a.at >= ${from} AND a.at < ${to}
    ), histogram AS (
      SELECT start, lateness, sum(n) AS n FROM (
        SELECT start, lateness, n FROM sent
        UNION ALL
        SELECT ${binned(window, Prisma.sql`at`)}, lateness, n FROM corrections
      ) AS parts
      GROUP BY start, lateness
      HAVING sum(n) > 0
    ), ranked AS (
      SELECT start, lateness,
             sum(n) OVER (PARTITION BY start ORDER BY lateness) AS below,
             sum(n) OVER (PARTITION BY start) AS total
      FROM histogram
    ), percentiles AS (
      SELECT start,
             (extract(epoch FROM min(lateness) FILTER (WHERE below >= ceil(0.5 * total))) * 1000)::float8 AS p50,
             (extract(epoch FROM min(lateness) FILTER (WHERE below >= ceil(0.99 * total))) * 1000)::float8 AS p99
      FROM ranked GROUP BY start
    )
    SELECT start, counted.sent, percentiles.p50, percentiles.p99
    FROM (SELECT start, sum(n)::int AS sent FROM sent GROUP BY start) AS counted
    FULL JOIN percentiles USING (start)`;
}

/** A row of `failures`: per bucket (`destination` null) or per destination (`start` null). */
interface FailureRow {
  start: Date;
  destination: string | null;
  cron_sent: number;
  failed: number;
  retried: number;
  failures: number;
  last_error: string | null;
  last_error_at: Date | null;
  last_at: Date | null;
}

/**
 * One pass over the window's failed attempts and its failed outcomes, grouped two ways: per bucket,
 * failed outcomes and retried attempts; per bucket and destination, failed attempts with the latest
 * error.
 *
 * An event's failure is its `failed_at` (Failed To Send and Failed To Queue alike); a cron run's
 * outcome is its `finished_at`, and cron runs sent count here too. A failed event attempt followed
 * by another counts as retried at its own time; a cron run keeps only its count of attempts, so its
 * failed attempts (all of them when it failed, all but the last when it was sent) and its retries
 * (`attempts - 1`) count when it finished, with its error.
 *
 * The organization's failed attempts come from one partial index on (org_id, at) holding what is
 * needed; their events are then looked up once each (a retried event has several), with the number
 * of its last attempt.
 */
function failures(orgId: string, window: StatsWindow): Prisma.Sql {
  const { from, to } = window;
  return Prisma.sql`
    WITH failed_attempts AS (
      SELECT event_id, attempt, at, error FROM event_attempts
      WHERE org_id = ${orgId} AND error IS NOT NULL AND at >= ${from} AND at < ${to}
    ), their_events AS (
      SELECT f.event_id, e.destination, last.attempt AS last_attempt
      FROM (SELECT DISTINCT event_id FROM failed_attempts) AS f
      CROSS JOIN LATERAL (SELECT e.destination FROM events e WHERE e.id = f.event_id AND e.org_id = ${orgId} LIMIT 1) AS e
      CROSS JOIN LATERAL (SELECT max(n.attempt) AS attempt FROM event_attempts n WHERE n.event_id = f.event_id) AS last
    ), rows AS (
      SELECT ${binned(window, Prisma.sql`a.at`)} AS start, e.destination, a.at, a.error, 0 AS cron_sent, 0 AS failed,
             CASE WHEN a.attempt < e.last_attempt THEN 1 ELSE 0 END AS retried, 1 AS failures
      FROM failed_attempts a JOIN their_events e USING (event_id)
      UNION ALL
      SELECT ${binned(window, Prisma.sql`failed_at`)}, NULL, failed_at, NULL, 0, 1, 0, 0
      FROM events WHERE org_id = ${orgId} AND failed_at >= ${from} AND failed_at < ${to}
      UNION ALL
      SELECT ${binned(window, Prisma.sql`r.finished_at`)}, j.destination, r.finished_at, r.error,
             CASE WHEN r.status = 'Sent' THEN 1 ELSE 0 END, CASE WHEN r.status = 'Sent' THEN 0 ELSE 1 END,
             greatest(r.attempts - 1, 0), r.attempts - CASE WHEN r.status = 'Sent' THEN 1 ELSE 0 END
      FROM cron_runs r JOIN cron_jobs j ON j.id = r.cron_job_id
      WHERE r.org_id = ${orgId} AND r.status IN ('Sent', 'Failed To Send')
        AND r.finished_at >= ${from} AND r.finished_at < ${to}
    ), by_bucket AS (
      SELECT start, NULL::text AS destination, sum(cron_sent)::int AS cron_sent, sum(failed)::int AS failed,
             sum(retried)::int AS retried, 0 AS failures, NULL::text AS last_error,
             NULL::timestamptz AS last_error_at, NULL::timestamptz AS last_at
      FROM rows GROUP BY start
    ), by_destination AS (
      SELECT start, destination, 0 AS cron_sent, 0 AS failed, 0 AS retried, sum(failures)::int AS failures,
             (array_agg(error ORDER BY at DESC) FILTER (WHERE error IS NOT NULL))[1] AS last_error,
             max(at) FILTER (WHERE error IS NOT NULL) AS last_error_at, max(at) AS last_at
      FROM rows WHERE destination IS NOT NULL AND failures > 0
      GROUP BY start, destination
    )
    SELECT * FROM by_bucket
    UNION ALL
    SELECT * FROM by_destination`;
}

/** The statements of a window's figures: events sent with their lateness, then failures. */
export const statsStatements = (orgId: string, window: StatsWindow): [Prisma.Sql, Prisma.Sql] => [
  sentAndLateness(orgId, window),
  failures(orgId, window),
];

async function usedThisMonth(db: Db, orgId: string, month: string): Promise<number> {
  const [row] = await db.$queryRaw<{ count: number }[]>`
    SELECT count FROM event_monthly_usage WHERE org_id = ${orgId} AND month = ${month}::date`;
  return row?.count ?? 0;
}

/** The start of the bucket holding `at`. */
export const bucketStart = (at: number, bucket: StatsBucket) => {
  const size = BUCKET_MS[bucket];
  return Math.floor((at - BUCKET_ORIGIN.getTime()) / size) * size + BUCKET_ORIGIN.getTime();
};

/** Failed attempts to one destination within a bucket. */
export interface DestinationFailures {
  failures: number;
  /** The latest failure's time (ms). */
  lastAt: number;
  /** The latest error, and its time (ms): a cron run sent at a later attempt keeps no error. */
  lastError: string | null;
  lastErrorAt: number;
}

/** What one bucket holds, before it is answered. */
export interface BucketFigures {
  sent: number;
  failed: number;
  retried: number;
  p50: number | null;
  p99: number | null;
  destinations: Map<string, DestinationFailures>;
}

export const emptyBucket = (): BucketFigures => ({
  sent: 0,
  failed: 0,
  retried: 0,
  p50: null,
  p99: null,
  destinations: new Map(),
});

/**
 * The figures of the buckets of the window that hold anything, by start (ms). Only what happened
 * inside the window counts, also in a first or last bucket that is only partly inside it.
 */
export async function computeBuckets(db: Db, orgId: string, window: StatsWindow): Promise<Map<number, BucketFigures>> {
  const [sentStatement, failuresStatement] = statsStatements(orgId, window);
  const [sentRows, failureRows] = await Promise.all([
    query<SentRow>(db, sentStatement),
    query<FailureRow>(db, failuresStatement),
  ]);
  const figures = new Map<number, BucketFigures>();
  const of = (start: Date) => {
    let bucket = figures.get(start.getTime());
    if (!bucket) {
      bucket = emptyBucket();
      figures.set(start.getTime(), bucket);
    }
    return bucket;
  };
  for (const row of sentRows) {
    const bucket = of(row.start);
    bucket.sent += row.sent ?? 0;
    bucket.p50 = row.p50;
    bucket.p99 = row.p99;
  }
  for (const row of failureRows) {
    const bucket = of(row.start);
    if (row.destination === null) {
      bucket.sent += row.cron_sent;
      bucket.failed += row.failed;
      bucket.retried += row.retried;
    } else {
      bucket.destinations.set(row.destination, {
        failures: row.failures,
        lastAt: row.last_at?.getTime() ?? 0,
        lastError: row.last_error,
        lastErrorAt: row.last_error_at?.getTime() ?? 0,
      });
    }
  }
  return figures;
}

/** The destinations with the most failures over the buckets, each with its latest error. */
function failingDestinations(buckets: Iterable<BucketFigures>): Stats["failingDestinations"] {
  const merged = new Map<string, DestinationFailures>();
  for (const bucket of buckets) {
    for (const [destination, failures] of bucket.destinations) {
      const seen = merged.get(destination);
      if (!seen) {
        merged.set(destination, { ...failures });
        continue;
      }
      seen.failures += failures.failures;
      seen.lastAt = Math.max(seen.lastAt, failures.lastAt);
      if (failures.lastError !== null && (seen.lastError === null || failures.lastErrorAt > seen.lastErrorAt)) {
        seen.lastError = failures.lastError;
        seen.lastErrorAt = failures.lastErrorAt;
      }
    }
  }
  return [...merged]
    .sort(([a, x], [b, y]) => y.failures - x.failures || y.lastAt - x.lastAt || (a < b ? -1 : a > b ? 1 : 0))
    .slice(0, FAILING_DESTINATIONS_LIMIT)
    .map(([destination, failures]) => ({ destination, failures: failures.failures, lastError: failures.lastError }));
}

/** Where the figures of the window's buckets come from: computed now, or partly kept (stats-cache.ts). */
export type BucketSource = (db: Db, orgId: string, window: StatsWindow) => Promise<Map<number, BucketFigures>>;

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
  source: BucketSource = computeBuckets,
): Promise<Stats> {
  const month = quotaMonth(usage.now);
  const [figures, used] = await Promise.all([source(db, orgId, window), usedThisMonth(db, orgId, month)]);
  const buckets: Stats["buckets"] = [];
  const totals = { sent: 0, failed: 0, retried: 0 };
  const size = BUCKET_MS[window.bucket];
  const inWindow: BucketFigures[] = [];
  for (let start = bucketStart(window.from.getTime(), window.bucket); start < window.to.getTime(); start += size) {
    const bucket = figures.get(start) ?? emptyBucket();
    inWindow.push(bucket);
    buckets.push({
      start: new Date(start).toISOString(),
      sent: bucket.sent,
      failed: bucket.failed,
      retried: bucket.retried,
      latenessMs: { p50: bucket.p50, p99: bucket.p99 },
    });
    totals.sent += bucket.sent;
    totals.failed += bucket.failed;
    totals.retried += bucket.retried;
  }
  return {
    from: window.from.toISOString(),
    to: window.to.toISOString(),
    bucket: window.bucket,
    buckets,
    totals,
    usage: { month: month.slice(0, 7), used, limit: usage.monthlyLimit },
    failingDestinations: failingDestinations(inWindow),
  };
}
