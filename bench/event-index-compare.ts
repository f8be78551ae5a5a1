// What the partial indexes of migration 20261126130000_partial_event_indexes save on the statements
// every event goes through: `node --import tsx bench/event-index-compare.ts [rounds]`.
//
// Two databases, both migrated: one as the migrations leave it, one with the three indexes on
// (org_id, failed_at), replay_of and (org_id, idempotency_key) made whole again, as before. Each
// holds 200,000 Sent events of history. Rounds alternate between them (the machine's noise falls on
// both); a round inserts 5,000 Pending events (one statement), claims them with `claimEvents` and
// records a successful attempt of each with `recordAttempts`, 500 per statement as a worker does.
// Printed: the median time per event of each step, and the WAL written per event by the claim and
// the record (read from pg_current_wal_insert_lsn, so nothing else may write to the server meanwhile;
// it counts the index entries added, and does not depend on the machine's load).
import { performance } from "node:perf_hooks";
import { type AttemptOfEvent, claimEvents, newId, recordAttempts } from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { createTestDatabase, type TestDatabase } from "@punctual/db/testing";
import pg from "pg";
import { insertOrganization } from "./lib/setup.ts";
import { quantile } from "./lib/stats.ts";

const ROUNDS = Number(process.argv[2] ?? 8);
const EVENTS_PER_ROUND = 5_000;
const BATCH = 500;
const HISTORY = 200_000;
const MAX_ATTEMPTS = 4;

const MADE_WHOLE = [
  `DROP INDEX "events_org_id_failed_at_idx"`,
  `CREATE INDEX "events_org_id_failed_at_idx" ON "events"("org_id", "failed_at")`,
  `DROP INDEX "events_replay_of_idx"`,
  `CREATE INDEX "events_replay_of_idx" ON "events"("replay_of")`,
  `DROP INDEX "events_org_id_idempotency_key_key"`,
  `CREATE UNIQUE INDEX "events_org_id_idempotency_key_key" ON "events"("org_id", "idempotency_key")`,
];

interface Variant {
  name: string;
  database: TestDatabase;
  client: pg.Client;
  db: Db;
  orgId: string;
  insertUs: number[];
  claimUs: number[];
  recordUs: number[];
  walBytes: number[];
}

async function open(name: string, statements: string[]): Promise<Variant> {
  const database = await createTestDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  for (const statement of statements) await client.query(statement);
  const { orgId } = await insertOrganization(client, `bench-index-${name}`);
  await client.query(
    `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, created_at, updated_at)
     SELECT 'evt_hist' || g, $1, 'https://hooks.example.com/a', '{"hello":"world"}', now() - g * interval '1 second',
       'Sent', now() - g * interval '1 second', now(), now()
     FROM generate_series(1, $2::int) g`,
    [orgId, HISTORY],
  );
  await client.query("VACUUM ANALYZE events");
  const db = createDb(database.url, { poolSize: 1 });
  return { name, database, client, db, orgId, insertUs: [], claimUs: [], recordUs: [], walBytes: [] };
}

const walLsn = async (client: pg.Client) =>
  (await client.query<{ lsn: string }>("SELECT pg_current_wal_insert_lsn()::text AS lsn")).rows[0]?.lsn ?? "0/0";

async function walSince(client: pg.Client, from: string): Promise<number> {
  const { rows } = await client.query<{ bytes: string }>(
    "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn) AS bytes",
    [from],
  );
  return Number(rows[0]?.bytes ?? 0);
}

async function round(variant: Variant): Promise<void> {
  const ids = Array.from({ length: EVENTS_PER_ROUND }, () => newId("evt"));
  const now = new Date();
  let started = performance.now();
  await variant.client.query(
    `INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, created_at, updated_at)
     SELECT id, $2, 'https://hooks.example.com/a', '{"hello":"world"}', $3, 'Pending', $3, $3 FROM unnest($1::text[]) AS t(id)`,
    [ids, variant.orgId, now],
  );
  variant.insertUs.push(((performance.now() - started) * 1000) / ids.length);
  const lsn = await walLsn(variant.client);
  let claimMs = 0;
  let recordMs = 0;
  for (let i = 0; i < ids.length; i += BATCH) {
    const batch = ids.slice(i, i + BATCH);
    started = performance.now();
    const claimed = await claimEvents(variant.db, batch, now, now, "bench");
    claimMs += performance.now() - started;
    if (claimed.some((result) => result.kind !== "claimed")) throw new Error("a claim left events unclaimed");
    const attempts: AttemptOfEvent[] = batch.map((eventId) => ({
      eventId,
      at: new Date(),
      responseStatus: 200,
      durationMs: 3,
      error: null,
      succeeded: true,
      maxAttempts: MAX_ATTEMPTS,
      last: false,
    }));
    started = performance.now();
    const recorded = await recordAttempts(variant.db, attempts);
    recordMs += performance.now() - started;
    if (recorded.some((result) => result.final !== "Sent")) throw new Error("a record did not end events as Sent");
  }
  variant.walBytes.push((await walSince(variant.client, lsn)) / ids.length);
  variant.claimUs.push((claimMs * 1000) / ids.length);
  variant.recordUs.push((recordMs * 1000) / ids.length);
}

const median = (values: number[]) =>
  quantile(
    [...values].sort((a, b) => a - b),
    0.5,
  ).toFixed(1);

const variants = [await open("partial (as migrated)", []), await open("whole (as before)", MADE_WHOLE)];
try {
  for (let i = 0; i < ROUNDS; i++) {
    // One round each, in turns, the first of each pair alternating.
    for (const variant of i % 2 === 0 ? variants : [...variants].reverse()) await round(variant);
  }
  for (const v of variants) {
    process.stdout.write(
      `${v.name}: insert ${median(v.insertUs)} µs, claim ${median(v.claimUs)} µs, record ${median(v.recordUs)} µs per event; ` +
        `claim + record wrote ${median(v.walBytes)} bytes of WAL per event (medians of ${ROUNDS} rounds of ${EVENTS_PER_ROUND})\n`,
    );
  }
} finally {
  for (const v of variants) {
    await v.db.$disconnect();
    await v.client.end();
    await v.database.drop();
  }
}
