import { newId, recordAttempts } from "@punctual/core";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { computeBuckets, type StatsWindow, statsStatements } from "../src/stats/stats-query.ts";

// The cost of an organization's statistics must not depend on other organizations' deliveries:
// every table scan of their statements reads the organization's own rows only, however many
// failures another one has in the same hours. Checked on the plans Postgres runs (EXPLAIN ANALYZE
// with its row counts) over a noisy neighbour's 4,000 failed attempts.

const WINDOW: StatsWindow = {
  from: new Date("2030-05-10T00:00:00.000Z"),
  to: new Date("2030-05-11T00:00:00.000Z"),
  bucket: "hour",
};
/** The noisy neighbour: events failed after 4 attempts, and events sent at their 2nd. */
const NOISY_FAILED_EVENTS = 1_000;
const NOISY_RETRIED_EVENTS = 500;

let context: TestContext;
let quiet: TestOrganization;
let noisy: TestOrganization;

/** Rows of `orgId` in each table, as the statistics could read them. */
let quietRows: { events: number; event_attempts: number };

/**
 * `events` events of `orgId` over the window, each with `attempts` attempts 3 s apart; the last
 * succeeds when `sent`. Plain SQL, as the worker's own statement inserts them.
 */
async function insertHistory(orgId: string, events: number, attempts: number, sent: boolean) {
  const prefix = `${newId("evt")}_`;
  const stepMs = (WINDOW.to.getTime() - WINDOW.from.getTime() - 60_000) / events;
  await context.db.$executeRaw`
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at)
    SELECT ${prefix} || g, ${orgId}, 'https://example.com/' || (g % 7), '{}', due,
           CASE WHEN ${sent} THEN 'Sent' ELSE 'Failed To Send' END,
           CASE WHEN ${sent} THEN last END, CASE WHEN ${sent} THEN NULL ELSE last END, due, last
    FROM generate_series(1, ${events}::int) AS g,
         LATERAL (SELECT ${WINDOW.from}::timestamptz + g * ${stepMs}::float8 * interval '1 millisecond' AS due) AS d,
         LATERAL (SELECT due + (${attempts}::int - 1) * interval '3 seconds' + interval '20 milliseconds' AS last) AS l`;
  await context.db.$executeRaw`
    INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
    SELECT e.id, n, e.scheduled_time + (n - 1) * interval '3 seconds' + interval '20 milliseconds',
           CASE WHEN ${sent} AND n = ${attempts}::int THEN 200 ELSE 503 END, 40,
           CASE WHEN ${sent} AND n = ${attempts}::int THEN NULL ELSE 'Receiver answered 503' END
    FROM events e, generate_series(1, ${attempts}::int) AS n
    WHERE starts_with(e.id, ${prefix})`;
}

beforeAll(async () => {
  context = await createTestContext();
  quiet = await createTestOrganization(context, "Quiet");
  noisy = await createTestOrganization(context, "Noisy");
  await insertHistory(quiet.orgId, 20, 1, true);
  await insertHistory(quiet.orgId, 3, 3, true);
  await insertHistory(quiet.orgId, 2, 4, false);
  await insertHistory(noisy.orgId, NOISY_FAILED_EVENTS, 4, false);
  await insertHistory(noisy.orgId, NOISY_RETRIED_EVENTS, 2, true);
  await context.db.$executeRawUnsafe("ANALYZE events, event_attempts");
  const [counts] = await context.db.$queryRaw<{ events: number; event_attempts: number }[]>`
    SELECT (SELECT count(*)::int FROM events WHERE org_id = ${quiet.orgId}) AS events,
           (SELECT count(*)::int FROM event_attempts a JOIN events e ON e.id = a.event_id
            WHERE e.org_id = ${quiet.orgId}) AS event_attempts`;
  quietRows = counts ?? { events: 0, event_attempts: 0 };
}, 60_000);
afterAll(() => context.close());

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

/** Every scan of a table in the plan, with the rows it read (kept or filtered out) over its loops. */
function scans(node: PlanNode): { relation: string; scan: string; read: number }[] {
  const own = node["Relation Name"]
    ? [
        {
          relation: node["Relation Name"],
          scan: `${node["Node Type"]} ${node["Index Name"] ?? ""}`.trim(),
          read:
            (node["Actual Rows"] +
              (node["Rows Removed by Filter"] ?? 0) +
              (node["Rows Removed by Index Recheck"] ?? 0)) *
            node["Actual Loops"],
        },
      ]
    : [];
  return [...own, ...(node.Plans ?? []).flatMap(scans)];
}

/** The plan Postgres runs for a statement, with actual row counts, as the API runs it (no JIT). */
async function explained(statement: { text: string; values: unknown[] }): Promise<PlanNode> {
  const client = new pg.Client({ connectionString: context.database.url });
  await client.connect();
  try {
    await client.query("SET jit = off");
    const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      `EXPLAIN (ANALYZE, FORMAT JSON) ${statement.text}`,
      statement.values,
    );
    const plan = rows[0]?.["QUERY PLAN"][0]?.Plan;
    if (!plan) throw new Error("EXPLAIN gave no plan");
    return plan;
  } finally {
    await client.end();
  }
}

describe("GET /api/stats beside a noisy neighbour", () => {
  it("reads only the organization's own rows, whatever another organization's failures", async () => {
    for (const statement of statsStatements(quiet.orgId, WINDOW)) {
      const read = scans(await explained(statement));
      expect(read.some((scan) => scan.relation === "event_attempts")).toBe(true);
      // The organization's own rows at most; the neighbour has thousands in the same hours.
      const beyond = read.filter(
        (scan) =>
          (scan.relation === "events" || scan.relation === "event_attempts") && scan.read > quietRows[scan.relation],
      );
      expect(beyond).toEqual([]);
    }
  });

  it("still counts the organization's failed attempts and retries", async () => {
    const figures = await computeBuckets(context.db, quiet.orgId, WINDOW);
    const totals = [...figures.values()].reduce(
      (sum, bucket) => ({
        sent: sum.sent + bucket.sent,
        failed: sum.failed + bucket.failed,
        retried: sum.retried + bucket.retried,
      }),
      { sent: 0, failed: 0, retried: 0 },
    );
    // 20 + 3 sent; 2 failed; retried: 2 per event sent at its 3rd attempt, 3 per event failed after 4.
    expect(totals).toEqual({ sent: 23, failed: 2, retried: 3 * 2 + 2 * 3 });
  });
});

describe("the organization of an attempt", () => {
  it("is recorded with every failed attempt and retry, and not with a first attempt that succeeded", async () => {
    const due = new Date("2030-05-12T00:00:00.000Z");
    const ids = [newId("evt"), newId("evt"), newId("evt")];
    for (const id of ids) {
      await context.db.$executeRaw`
        INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, created_at, updated_at)
        VALUES (${id}, ${quiet.orgId}, 'https://example.com/a', '{}', ${due}, 'Queued', ${due}, ${due})`;
    }
    const [sentAtOnce, failedThenSent, failing] = ids as [string, string, string];
    const attempt = (eventId: string, succeeded: boolean, seconds: number) => ({
      eventId,
      succeeded,
      at: new Date(due.getTime() + seconds * 1000),
      responseStatus: succeeded ? 200 : 503,
      durationMs: 40,
      error: succeeded ? null : "Receiver answered 503",
      maxAttempts: 4,
      last: false,
    });
    await recordAttempts(context.db, [
      attempt(sentAtOnce, true, 0),
      attempt(failedThenSent, false, 0),
      attempt(failing, false, 0),
    ]);
    await recordAttempts(context.db, [attempt(failedThenSent, true, 3), attempt(failing, false, 3)]);
    const rows = await context.db.$queryRaw<{ event_id: string; attempt: number; org_id: string | null }[]>`
      SELECT event_id, attempt, org_id FROM event_attempts WHERE event_id = ANY(${ids}::text[]) ORDER BY attempt, event_id`;
    const orgOf = (eventId: string, n: number) =>
      rows.find((row) => row.event_id === eventId && row.attempt === n)?.org_id;
    expect(orgOf(sentAtOnce, 1)).toBeNull();
    expect(orgOf(failedThenSent, 1)).toBe(quiet.orgId);
    expect(orgOf(failedThenSent, 2)).toBe(quiet.orgId);
    expect(orgOf(failing, 1)).toBe(quiet.orgId);
    expect(orgOf(failing, 2)).toBe(quiet.orgId);
  });
});
