import { generateApiKey, generateSigningSecret, newId, quotaMonth } from "@punctual/core";
import { prepareTemplateDatabase, testServerUrl, urlForDatabase, withClient } from "@punctual/db/testing";
import type pg from "pg";

// Databases and records of a benchmark run, written with plain SQL (pg): creating them is not what
// is measured, so it should be fast and out of the way.

export interface BenchOrganization {
  orgId: string;
  apiKey: string;
}

/** An organization with an owner and an API key (hashed as the API stores it). */
export async function insertOrganization(db: pg.ClientBase, name: string): Promise<BenchOrganization> {
  const accountId = newId("acc");
  const orgId = newId("org");
  await db.query("INSERT INTO accounts (id, email) VALUES ($1, $2)", [accountId, `${accountId}@bench.invalid`]);
  await db.query("INSERT INTO organizations (id, name, owner_id, signing_secret) VALUES ($1, $2, $3, $4)", [
    orgId,
    name,
    accountId,
    generateSigningSecret(),
  ]);
  await db.query("INSERT INTO memberships (org_id, account_id, role) VALUES ($1, $2, 'owner')", [orgId, accountId]);
  return { orgId, apiKey: await insertApiKey(db, orgId) };
}

export async function insertApiKey(db: pg.ClientBase, orgId: string): Promise<string> {
  const key = generateApiKey();
  await db.query("INSERT INTO api_keys (id, org_id, prefix, hash) VALUES ($1, $2, $3, $4)", [
    newId("key"),
    orgId,
    key.prefix,
    key.hash,
  ]);
  return key.key;
}

/**
 * Pending events in one statement, with their months' quota units taken as the API would: what
 * `createEvent` does one by one, for a whole burst.
 */
export async function insertEvents(
  db: pg.ClientBase,
  orgId: string,
  destination: string,
  events: { id: string; scheduledTime: Date }[],
  /** The delivery policy stored with every event (contract §10.1); none by default. */
  deliveryPolicy?: object,
  /** The n-th event's flow is the n-th of these, round robin (contract §10.2); none by default. */
  flowKeys: string[] = [],
): Promise<void> {
  await db.query(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::date[], $7::text[]) AS t(id, scheduled_time, month, flow_key)
     ), quota AS (
       INSERT INTO event_monthly_usage AS usage (org_id, month, count)
       SELECT $4, month, count(*) FROM input GROUP BY month
       ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + EXCLUDED.count
     )
     INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, delivery_policy, flow_key,
       created_at, updated_at)
     SELECT id, $4, $5, '{"hello":"world"}', scheduled_time, 'Pending', $6::jsonb, flow_key, now(), now() FROM input`,
    [
      events.map((e) => e.id),
      events.map((e) => e.scheduledTime.toISOString()),
      events.map((e) => quotaMonth(e.scheduledTime)),
      orgId,
      destination,
      deliveryPolicy === undefined ? null : JSON.stringify(deliveryPolicy),
      events.map((_, n) => (flowKeys.length === 0 ? null : flowKeys[n % flowKeys.length])),
    ],
  );
}

/** Creates or replaces the organization's flows with these limits, as PUT /api/flows/:flowKey stores them. */
export async function insertFlows(
  db: pg.ClientBase,
  orgId: string,
  flowKeys: string[],
  limits: { rate: number; parallelism: number },
): Promise<void> {
  await db.query(
    `INSERT INTO flows (org_id, flow_key, rate, period_ms, parallelism)
     SELECT $1, flow_key, $3, 1000, $4 FROM unnest($2::text[]) AS t(flow_key)
     ON CONFLICT (org_id, flow_key) DO UPDATE SET rate = EXCLUDED.rate, parallelism = EXCLUDED.parallelism`,
    [orgId, flowKeys, limits.rate, limits.parallelism],
  );
}

/** How many of these events are Sent, and how many attempts they have. */
export async function bookkeeping(db: pg.ClientBase, ids: string[]): Promise<{ sent: number; attempts: number }> {
  const { rows } = await db.query<{ sent: string; attempts: string }>(
    `SELECT (SELECT count(*) FROM events WHERE id = ANY($1) AND status = 'Sent') AS sent,
            (SELECT count(*) FROM event_attempts WHERE event_id = ANY($1)) AS attempts`,
    [ids],
  );
  return { sent: Number(rows[0]?.sent), attempts: Number(rows[0]?.attempts) };
}

/** The first seeded event's time; the n-th is SEED_STEP_MS later (a fixed future: all visible). */
export const SEED_START = Date.parse("2030-01-01T00:00:00Z");
export const SEED_STEP_MS = 20_000;

/**
 * An organization with `rows` Pending events, inserted by one `INSERT … SELECT generate_series`.
 * The organization's name records the count, and is committed with the events: its presence
 * means the seed is complete.
 */
async function seedListOrganization(db: pg.ClientBase, rows: number): Promise<string> {
  await db.query("BEGIN");
  const { orgId } = await insertOrganization(db, `bench-list-${rows}`);
  await db.query(
    `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, created_at, updated_at)
     SELECT 'evt_seed' || lpad(g::text, 18, '0'), $1, 'https://example.com/hook', '{"n":' || g || '}',
            $2::timestamptz + (g * $3::float8) * interval '1 millisecond', 'Pending', now(), now()
     FROM generate_series(0, $4 - 1) AS g`,
    [orgId, new Date(SEED_START).toISOString(), SEED_STEP_MS, rows],
  );
  await db.query("COMMIT");
  await db.query("ANALYZE events");
  return orgId;
}

async function findListOrganization(db: pg.ClientBase, rows: number): Promise<string | undefined> {
  const { rows: found } = await db.query<{ id: string }>("SELECT id FROM organizations WHERE name = $1", [
    `bench-list-${rows}`,
  ]);
  return found[0]?.id;
}

export interface ListSeed {
  url: string;
  orgId: string;
  apiKey: string;
  /** Whether this run had to insert the rows (else an earlier run's seed was reused). */
  seeded: boolean;
  /** Removes this run's API key (the seed itself stays for the next run). */
  release(): Promise<void>;
}

/**
 * The URL of the database kept across runs for seeds of `rows` rows, named after the template and
 * the count (seeding a million rows takes a while); older seeds of other migrations are dropped.
 */
export async function sharedSeedDatabase(rows: number): Promise<string> {
  const template = await prepareTemplateDatabase();
  const name = `${template.replace("punctual_template_", "punctual_bench_")}_${rows}`;
  await withClient(testServerUrl(), async (admin) => {
    const { rows: stale } = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'punctual\\_bench\\_%' AND datname <> $1",
      [name],
    );
    for (const { datname } of stale) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  });
  return urlForDatabase(name);
}

/**
 * `rows` events of one organization for the list benchmark. With `shared`, they live in the
 * database kept across runs (`sharedSeedDatabase`); else in `runDatabaseUrl`.
 */
export async function prepareListSeed(rows: number, shared: boolean, runDatabaseUrl: string): Promise<ListSeed> {
  const url = shared ? await sharedSeedDatabase(rows) : runDatabaseUrl;
  return withClient(url, async (db) => {
    const existing = await findListOrganization(db, rows);
    const orgId = existing ?? (await seedListOrganization(db, rows));
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
