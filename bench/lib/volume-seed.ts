import { performance } from "node:perf_hooks";
import { DAY_MS, generateSigningSecret } from "@punctual/core";
import { prepareTemplateDatabase, testServerUrl, urlForDatabase, withClient } from "@punctual/db/testing";
import type pg from "pg";

// The data set of the "Postgres at volume" benchmark: `events` events over VOLUME_SEED_DAYS days
// across VOLUME_ORGS organizations, with about two attempt rows per event, written by set-based SQL
// (`INSERT … SELECT … FROM generate_series`). Event g (0 ≤ g < events) is due at
// VOLUME_SEED_START + g × step and belongs to the big organization when g % 5 < 2 (40 %), else to
// one of the others. By position and number:
//   - the last 5 % (the seed's future) are Pending, without attempts;
//   - the 0.04 % just before them are Queued, after one failed attempt (a retry is waiting);
//   - the others, by g % 100: 0–95 Sent after 1 to 3 attempts (all but the last answered 500),
//     96–99 Failed To Send after 4.
// The big organization's events carry labels and flows, as a sender's would (VOLUME_LABELS): each
// names one of 1,000 customers (about 2,000 events each, spread over the 60 days), two campaigns of
// events in a row follow each other (1 % of the data set and 0.04 %: 50,000 and 2,000 of
// 5,000,000), and each is in one of 100 flows (about 20,000 events each).
// The window lies in the future (2030), so every event is visible to the API (contract §3) at any
// date the benchmark runs, and the data set can be kept across runs.

export const VOLUME_SEED_START = Date.parse("2030-03-01T00:00:00Z");
export const VOLUME_SEED_DAYS = 60;
export const VOLUME_ORGS = 1_000;
/** The big organization's id; the others are org_vol0001 … org_vol0999. */
export const VOLUME_BIG_ORG = "org_vol0000";
const ATTEMPT_GAP_MS = 5_000;

/** The labels and flows of the big organization's events (its event n is g = 5 × (n div 2) + n mod 2). */
export const VOLUME_LABELS = {
  customers: 1_000,
  /**
   * Label `campaign`: the big organization's events in a row from g = a fifth of the data set on,
   * each campaign its share of the data set, one after the other.
   */
  campaigns: [
    { value: "spring", share: 0.01 },
    { value: "autumn", share: 0.0004 },
  ],
  flows: 100,
};
/**
 * Each campaign's value, number of events (the big organization's, 2 of every 5 from its first)
 * and span of g: the first a fifth of the way into the data set, among Sent events.
 */
export function volumeCampaigns(events: number): { value: string; events: number; from: number; to: number }[] {
  let from = 5 * Math.floor(events / 25);
  return VOLUME_LABELS.campaigns.map(({ value, share }) => {
    const n = 2 * Math.max(1, Math.floor((events * share) / 2));
    const campaign = { value, events: n, from, to: from + (n / 2) * 5 };
    from = campaign.to;
    return campaign;
  });
}

/** Where the seed's statuses change, for `events` events. */
export function volumeShape(events: number) {
  const pendingFrom = Math.floor(events * 0.95);
  const queuedFrom = pendingFrom - Math.max(1, Math.floor(events * 0.0004));
  const stepMs = (VOLUME_SEED_DAYS * DAY_MS) / events;
  return {
    events,
    stepMs,
    pendingFrom,
    queuedFrom,
    /** The seed's "now": its Pending events are due after it. */
    seedNow: VOLUME_SEED_START + pendingFrom * stepMs,
    /** Events of the seed's first day. */
    firstDay: Math.ceil(DAY_MS / stepMs),
  };
}

export const volumeEventId = (g: number) => `evt_vol${String(g).padStart(10, "0")}`;

/** Per event g: its status and attempt count ($5 pendingFrom, $6 queuedFrom). */
const SHAPE = `
  CASE WHEN g >= $5 THEN 'Pending' WHEN g >= $6 THEN 'Queued'
       WHEN g % 100 < 96 THEN 'Sent' ELSE 'Failed To Send' END AS status,
  CASE WHEN g >= $5 THEN 0 WHEN g >= $6 THEN 1 WHEN g % 100 < 96 THEN 1 + (g / 7) % 3 ELSE 4 END AS attempts`;
const DUE = "$3::timestamptz + (g * $4::float8) * interval '1 millisecond'";
/** Event g's organization. */
const ORG = `CASE WHEN g % 5 < 2 THEN '${VOLUME_BIG_ORG}' ELSE 'org_vol' || lpad((1 + (g * 7919) % ${VOLUME_ORGS - 1})::text, 4, '0') END`;

/**
 * Inserts events g in [from, to) and their attempts (two statements). With `ignoreExisting`, rows
 * already there are left alone: the benchmark puts back what its retention run deleted.
 */
export async function insertVolumeRange(
  db: pg.ClientBase,
  events: number,
  from: number,
  to: number,
  ignoreExisting = false,
): Promise<void> {
  const shape = volumeShape(events);
  const params = [
    from,
    to,
    new Date(VOLUME_SEED_START).toISOString(),
    shape.stepMs,
    shape.pendingFrom,
    shape.queuedFrom,
  ];
  const conflict = ignoreExisting ? "ON CONFLICT DO NOTHING" : "";
  const big = "g % 5 < 2";
  const customer = `'cus' || lpad(((g / 5) % ${VOLUME_LABELS.customers})::text, 4, '0')`;
  const campaignLabel = `CASE ${volumeCampaigns(events)
    .map((c) => `WHEN g >= ${c.from} AND g < ${c.to} THEN jsonb_build_object('campaign', '${c.value}')`)
    .join(" ")} ELSE '{}' END`;
  await db.query(
    `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at, labels, flow_key)
     SELECT 'evt_vol' || lpad(g::text, 10, '0'), ${ORG},
            'https://hooks.example.com/d' || (g % 50), '{"n":' || g || '}', due, s.status,
            CASE WHEN s.status = 'Sent' THEN last END, CASE WHEN s.status = 'Failed To Send' THEN last END,
            due - interval '1 hour', COALESCE(last, due - interval '1 hour'),
            CASE WHEN ${big} THEN jsonb_build_object('customer', ${customer}) || ${campaignLabel} END,
            CASE WHEN ${big} THEN 'flow' || lpad(((g / 5) % ${VOLUME_LABELS.flows})::text, 3, '0') END
     FROM generate_series($1::bigint, $2::bigint - 1) AS g,
          LATERAL (SELECT ${SHAPE}) AS s,
          LATERAL (SELECT ${DUE} AS due) AS d,
          LATERAL (SELECT CASE WHEN s.status IN ('Sent', 'Failed To Send')
                          THEN due + ((s.attempts - 1) * ${ATTEMPT_GAP_MS} + 40) * interval '1 millisecond' END AS last) AS l
     ${conflict}`,
    params,
  );
  // A failed attempt or a retry carries its organization, as Postgres' trigger gives it to the
  // worker's; given here, the trigger is not called for the millions of rows of the seed.
  await db.query(
    `INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error, org_id)
     SELECT 'evt_vol' || lpad(g::text, 10, '0'), n,
            ${DUE} + ((n - 1) * ${ATTEMPT_GAP_MS} + 40) * interval '1 millisecond',
            CASE WHEN n = s.attempts AND s.status = 'Sent' THEN 200 ELSE 500 END, 40,
            CASE WHEN n = s.attempts AND s.status = 'Sent' THEN NULL ELSE 'Receiver answered 500' END,
            CASE WHEN n = s.attempts AND s.status = 'Sent' AND n = 1 THEN NULL ELSE ${ORG} END
     FROM generate_series($1::bigint, $2::bigint - 1) AS g,
          LATERAL (SELECT ${SHAPE}) AS s,
          LATERAL generate_series(1, s.attempts) AS n
     ${conflict}`,
    params,
  );
}

export interface VolumeSeedTimings {
  /** Dropping the secondary indexes (when `dropIndexes`). */
  dropMs: number;
  insertEventsAndAttemptsMs: number;
  /** Re-creating them (when `dropIndexes`). */
  indexMs: number;
  vacuumAnalyzeMs: number;
  totalMs: number;
}

/** The secondary indexes of a table, as their CREATE statements. */
async function secondaryIndexes(db: pg.ClientBase, table: string): Promise<{ name: string; definition: string }[]> {
  const { rows } = await db.query<{ name: string; definition: string }>(
    `SELECT i.relname AS name, pg_get_indexdef(x.indexrelid) AS definition
     FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
     WHERE t.relname = $1 AND NOT x.indisprimary AND NOT x.indisunique`,
    [table],
  );
  return rows;
}

/**
 * The whole data set in one transaction, the organization named `marker` committed with it. With
 * `dropIndexes`, the secondary (non-unique) indexes of events and event_attempts are dropped first
 * and built after the load; the primary keys and unique indexes stay (the inserts rely on them).
 */
export async function seedVolume(
  db: pg.ClientBase,
  events: number,
  marker: string,
  dropIndexes: boolean,
  log: (message: string) => void,
): Promise<VolumeSeedTimings> {
  const started = performance.now();
  await db.query("BEGIN");
  const secret = generateSigningSecret();
  await db.query(
    `INSERT INTO accounts (id, email)
     SELECT 'acc_vol' || lpad(i::text, 4, '0'), 'acc_vol' || i || '@bench.invalid' FROM generate_series(0, $1 - 1) AS i`,
    [VOLUME_ORGS],
  );
  await db.query(
    `INSERT INTO organizations (id, name, owner_id, signing_secret)
     SELECT 'org_vol' || lpad(i::text, 4, '0'), CASE WHEN i = 0 THEN $2 ELSE 'bench-volume-' || i END,
            'acc_vol' || lpad(i::text, 4, '0'), $3
     FROM generate_series(0, $1 - 1) AS i`,
    [VOLUME_ORGS, marker, secret],
  );
  await db.query(
    `INSERT INTO memberships (org_id, account_id, role)
     SELECT 'org_vol' || lpad(i::text, 4, '0'), 'acc_vol' || lpad(i::text, 4, '0'), 'owner' FROM generate_series(0, $1 - 1) AS i`,
    [VOLUME_ORGS],
  );
  let mark = performance.now();
  const dropped: string[] = [];
  if (dropIndexes) {
    for (const table of ["events", "event_attempts"]) {
      for (const index of await secondaryIndexes(db, table)) {
        await db.query(`DROP INDEX "${index.name}"`);
        dropped.push(index.definition);
      }
    }
  }
  const dropMs = performance.now() - mark;
  mark = performance.now();
  // In slices, so that the log shows progress.
  const slice = Math.max(1, Math.ceil(events / 10));
  for (let from = 0; from < events; from += slice) {
    await insertVolumeRange(db, events, from, Math.min(events, from + slice));
    log(
      `volume seed: ${Math.min(events, from + slice).toLocaleString("en-US")} of ${events.toLocaleString("en-US")} events inserted`,
    );
  }
  // The quota counters of the seeded months, as the API would have counted them.
  await db.query(
    `INSERT INTO event_monthly_usage (org_id, month, count)
     SELECT org_id, date_trunc('month', scheduled_time AT TIME ZONE 'UTC')::date, count(*) FROM events
     WHERE id LIKE 'evt\\_vol%' GROUP BY 1, 2`,
  );
  const insertEventsAndAttemptsMs = performance.now() - mark;
  mark = performance.now();
  if (dropped.length > 0) {
    await db.query("SET LOCAL maintenance_work_mem = '256MB'");
    for (const definition of dropped) await db.query(definition);
  }
  const indexMs = performance.now() - mark;
  await db.query("COMMIT");
  mark = performance.now();
  // Index-only scans need the visibility map; the planner needs the new rows' statistics.
  await db.query("VACUUM ANALYZE events");
  await db.query("VACUUM ANALYZE event_attempts");
  const vacuumAnalyzeMs = performance.now() - mark;
  return { dropMs, insertEventsAndAttemptsMs, indexMs, vacuumAnalyzeMs, totalMs: performance.now() - started };
}

/**
 * The database kept across runs for a data set of `events` events, named after the migrations'
 * template and the count (`punctual_volume_<migrations>_<events>`); older ones are dropped.
 */
export async function sharedVolumeDatabase(events: number): Promise<string> {
  const template = await prepareTemplateDatabase();
  const name = `${template.replace("punctual_template_", "punctual_volume_")}_${events}`;
  await withClient(testServerUrl(), async (admin) => {
    const { rows: stale } = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE 'punctual\\_volume\\_%' AND datname <> $1",
      [name],
    );
    for (const { datname } of stale) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
    const exists = await admin.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount === 0) await admin.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
  });
  return urlForDatabase(name);
}

export interface VolumeSeed {
  url: string;
  events: number;
  attempts: number;
  /** This run's seeding times, when it had to seed (else an earlier run's data set was reused). */
  timings?: VolumeSeedTimings;
}

/** The data set of `events` events in the shared database (`shared`) or in `runDatabaseUrl`. */
export async function prepareVolumeSeed(
  events: number,
  shared: boolean,
  runDatabaseUrl: string,
  log: (message: string) => void,
): Promise<VolumeSeed> {
  const url = shared ? await sharedVolumeDatabase(events) : runDatabaseUrl;
  const marker = `bench-volume-big-${events}`;
  return withClient(url, async (db) => {
    const { rowCount } = await db.query("SELECT 1 FROM organizations WHERE name = $1", [marker]);
    const timings = rowCount === 0 ? await seedVolume(db, events, marker, true, log) : undefined;
    // The data set's own rows (a smoke run seeds beside the run's other events).
    const { rows } = await db.query<{ events: string; attempts: string }>(
      `SELECT (SELECT count(*) FROM events WHERE org_id LIKE 'org\\_vol%') AS events,
              (SELECT count(*) FROM event_attempts WHERE event_id LIKE 'evt\\_vol%') AS attempts`,
    );
    return { url, events: Number(rows[0]?.events), attempts: Number(rows[0]?.attempts), timings };
  });
}
