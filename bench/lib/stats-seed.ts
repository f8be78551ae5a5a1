import { DAY_MS } from "@punctual/core";
import { withClient } from "@punctual/db/testing";
import type pg from "pg";
import { insertApiKey, insertOrganization, type ListSeed, sharedSeedDatabase } from "./setup.ts";

// The delivery history of the statistics benchmark: one organization's events spread evenly over
// the 30 days before STATS_SEED_END, each with its attempts as the worker records them. Most are
// sent at the first attempt; a few percent are retried (2 to 4 attempts) and some of those fail.
// Beside it, a noisy neighbour: another organization whose deliveries all fail, in the hours the
// measured windows cover, so that the measurement shows whether one organization's statistics cost
// more when another's deliveries fail.

/**
 * The end of the seeded history, fixed so that a reused seed measures alike; in the past, as the
 * history a console looks at is (its hours have settled: the API keeps their figures).
 */
export const STATS_SEED_END = Date.parse("2026-01-01T00:00:00Z");
export const STATS_SEED_DAYS = 30;
/** Destinations the events are spread over. */
const DESTINATIONS = 20;

/**
 * Seeds `rows` events and their attempts in one transaction (plain SQL, `generate_series`). Event
 * n, by its number modulo 100: 0–95 are sent at the first attempt; 96–97 at the 2nd to 4th after
 * 500s; 98–99 fail after 4 attempts. First attempts start 1–50 ms after the event's time, retries 3,
 * 5 and 10 s after the attempt before. Returns the organization's id.
 */
export async function seedStatsHistory(db: pg.ClientBase, name: string, rows: number): Promise<string> {
  await db.query("BEGIN");
  const { orgId } = await insertOrganization(db, name);
  const start = new Date(STATS_SEED_END - STATS_SEED_DAYS * DAY_MS).toISOString();
  const stepMs = (STATS_SEED_DAYS * DAY_MS) / rows;
  // Event ids are the organization's id and the event's number: unique beside other seeds.
  // Per event: its attempts, whether the last succeeded, its first attempt's lateness (ms).
  const shape = `
    CASE WHEN g % 100 < 96 THEN 1 WHEN g % 100 < 98 THEN 2 + g % 3 ELSE 4 END AS attempts,
    g % 100 < 98 AS sent,
    1 + ((g % 1000) * 7919) % 50 AS late_ms`;
  // Attempt n starts the sum of the retry delays before it after the first one.
  const offsetMs = "CASE n WHEN 1 THEN 0 WHEN 2 THEN 3000 WHEN 3 THEN 8000 ELSE 18000 END";
  await db.query(
    `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at)
     SELECT 'evt_' || substr($1, 5) || lpad(g::text, 7, '0'), $1, 'https://hooks.example.com/d' || (g % ${DESTINATIONS}), '{}',
            due, CASE WHEN s.sent THEN 'Sent' ELSE 'Failed To Send' END,
            CASE WHEN s.sent THEN last END, CASE WHEN NOT s.sent THEN last END, due, last
     FROM generate_series(0, $2 - 1) AS g,
          LATERAL (SELECT ${shape}) AS s,
          LATERAL (SELECT $3::timestamptz + (g * $4::float8) * interval '1 millisecond' AS due) AS d,
          LATERAL (SELECT due + (s.late_ms + CASE s.attempts WHEN 1 THEN 0 WHEN 2 THEN 3000 WHEN 3 THEN 8000 ELSE 18000 END)
                          * interval '1 millisecond' AS last) AS l`,
    [orgId, rows, start, stepMs],
  );
  // A failed attempt or a retry carries its organization, as Postgres' trigger gives it to the
  // worker's; given here, the trigger is not called for each row of the seed.
  await db.query(
    `INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error, org_id)
     SELECT 'evt_' || substr($4, 5) || lpad(g::text, 7, '0'), n,
            $2::timestamptz + (g * $3::float8 + s.late_ms + ${offsetMs}) * interval '1 millisecond',
            CASE WHEN n = s.attempts AND s.sent THEN 200 ELSE 500 END, 40,
            CASE WHEN n = s.attempts AND s.sent THEN NULL ELSE 'Receiver answered 500' END,
            CASE WHEN n = 1 AND s.attempts = 1 AND s.sent THEN NULL ELSE $4 END
     FROM generate_series(0, $1 - 1) AS g,
          LATERAL (SELECT ${shape}) AS s,
          LATERAL generate_series(1, s.attempts) AS n`,
    [rows, start, stepMs, orgId],
  );
  await db.query("COMMIT");
  // Index-only scans need the visibility map; the planner needs the new rows' statistics.
  await db.query("VACUUM ANALYZE events");
  await db.query("VACUUM ANALYZE event_attempts");
  return orgId;
}

/** Where the noisy neighbour's failures lie: the last day of the history, which every window covers. */
export const NEIGHBOUR_HOURS = 24;

/**
 * The noisy neighbour: an organization with `failedAttempts` failed attempts (events failed after
 * 4 attempts that timed out, 3, 5 and 10 s apart) spread evenly over the NEIGHBOUR_HOURS hours
 * before STATS_SEED_END. Returns its id.
 */
export async function seedNoisyNeighbour(db: pg.ClientBase, name: string, failedAttempts: number): Promise<string> {
  await db.query("BEGIN");
  const { orgId } = await insertOrganization(db, name);
  const events = Math.ceil(failedAttempts / 4);
  const start = new Date(STATS_SEED_END - NEIGHBOUR_HOURS * 3_600_000).toISOString();
  const stepMs = (NEIGHBOUR_HOURS * 3_600_000 - 20_000) / events;
  const offsetMs = "CASE n WHEN 1 THEN 0 WHEN 2 THEN 3000 WHEN 3 THEN 8000 ELSE 18000 END";
  await db.query(
    `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, failed_at, created_at, updated_at)
     SELECT 'evt_' || substr($1, 5) || lpad(g::text, 7, '0'), $1, 'https://noisy.example.com/d' || (g % ${DESTINATIONS}),
            '{}', due, 'Failed To Send', due + interval '18 seconds', due, due + interval '18 seconds'
     FROM generate_series(0, $2 - 1) AS g,
          LATERAL (SELECT $3::timestamptz + (g * $4::float8) * interval '1 millisecond' AS due) AS d`,
    [orgId, events, start, stepMs],
  );
  await db.query(
    `INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error, org_id)
     SELECT 'evt_' || substr($1, 5) || lpad(g::text, 7, '0'), n,
            $3::timestamptz + (g * $4::float8 + ${offsetMs}) * interval '1 millisecond',
            NULL, 10000, 'Timed out after 10000 ms', $1
     FROM generate_series(0, $2 - 1) AS g, generate_series(1, 4) AS n`,
    [orgId, events, start, stepMs],
  );
  await db.query("COMMIT");
  await db.query("VACUUM ANALYZE events");
  await db.query("VACUUM ANALYZE event_attempts");
  return orgId;
}

/** The statistics benchmark's seed: the measured organization, and its neighbour's failed attempts. */
export interface StatsSeed extends ListSeed {
  neighbourFailures: number;
}

/**
 * `rows` events with their attempts for the statistics benchmark, and a neighbour's
 * `neighbourFailures` failed attempts: in the database kept across runs (`shared`, beside the list
 * benchmark's events, under organizations of their own whose names record the counts and are
 * committed with the rows) or in `runDatabaseUrl`.
 */
export async function prepareStatsSeed(
  rows: number,
  neighbourFailures: number,
  shared: boolean,
  runDatabaseUrl: string,
): Promise<StatsSeed> {
  const url = shared ? await sharedSeedDatabase(rows) : runDatabaseUrl;
  const end = new Date(STATS_SEED_END).toISOString().slice(0, 10);
  const name = `bench-stats-${rows}-${end}`;
  const neighbour = `bench-stats-neighbour-${neighbourFailures}-${end}`;
  return withClient(url, async (db) => {
    const idOf = async (orgName: string) =>
      (await db.query<{ id: string }>("SELECT id FROM organizations WHERE name = $1", [orgName])).rows[0]?.id;
    const existing = await idOf(name);
    const orgId = existing ?? (await seedStatsHistory(db, name, rows));
    const neighbourSeeded = (await idOf(neighbour)) === undefined;
    if (neighbourSeeded) await seedNoisyNeighbour(db, neighbour, neighbourFailures);
    const apiKey = await insertApiKey(db, orgId);
    return {
      url,
      orgId,
      apiKey,
      neighbourFailures,
      seeded: existing === undefined || neighbourSeeded,
      release: () =>
        withClient(url, (c) => c.query("DELETE FROM api_keys WHERE org_id = $1", [orgId])).then(() => undefined),
    };
  });
}
