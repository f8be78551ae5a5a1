import { DAY_MS } from "@punctual/core";
import { withClient } from "@punctual/db/testing";
import type pg from "pg";
import { insertApiKey, insertOrganization, type ListSeed, sharedSeedDatabase } from "./setup.ts";

// The delivery history of the statistics benchmark: one organization's events spread evenly over
// the 30 days before STATS_SEED_END, each with its attempts as the worker records them. Most are
// sent at the first attempt; a few percent are retried (2 to 4 attempts) and some of those fail.

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
  await db.query(
    `INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
     SELECT 'evt_' || substr($4, 5) || lpad(g::text, 7, '0'), n,
            $2::timestamptz + (g * $3::float8 + s.late_ms + ${offsetMs}) * interval '1 millisecond',
            CASE WHEN n = s.attempts AND s.sent THEN 200 ELSE 500 END, 40,
            CASE WHEN n = s.attempts AND s.sent THEN NULL ELSE 'Receiver answered 500' END
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

/**
 * `rows` events with their attempts for the statistics benchmark: in the database kept across runs
 * (`shared`, beside the list benchmark's events, under an organization of its own whose name
 * records the count and is committed with the rows) or in `runDatabaseUrl`.
 */
export async function prepareStatsSeed(rows: number, shared: boolean, runDatabaseUrl: string): Promise<ListSeed> {
  const url = shared ? await sharedSeedDatabase(rows) : runDatabaseUrl;
  const name = `bench-stats-${rows}-${new Date(STATS_SEED_END).toISOString().slice(0, 10)}`;
  return withClient(url, async (db) => {
    const { rows: found } = await db.query<{ id: string }>("SELECT id FROM organizations WHERE name = $1", [name]);
    const existing = found[0]?.id;
    const orgId = existing ?? (await seedStatsHistory(db, name, rows));
    const apiKey = await insertApiKey(db, orgId);
    return {
      url,
      orgId,
      apiKey,
      seeded: existing === undefined,
      release: () =>
        withClient(url, (c) => c.query("DELETE FROM api_keys WHERE org_id = $1", [orgId])).then(() => undefined),
    };
  });
}
