import { fixedClock, newId } from "@punctual/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createRetention, monthsBefore } from "../src/maintenance/retention.ts";

// Retention (contract §8) against a real Postgres, with the clock standing still at NOW: rows one
// millisecond inside a window stay, rows one millisecond outside go.

const NOW = new Date("2031-06-15T12:00:00.000Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const at = (ms: number) => new Date(NOW.getTime() + ms);

let context: TestContext;
let org: TestOrganization;
let searchCutoff: Date;
let historyCutoff: Date;
let cronJobId: string;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
  searchCutoff = at(-context.config.SEARCH_WINDOW_DAYS * DAY_MS);
  historyCutoff = at(-context.config.HISTORY_DAYS * DAY_MS);
});
afterAll(() => context.close());

beforeEach(async () => {
  await context.db.$executeRaw`DELETE FROM events`;
  await context.db.$executeRaw`DELETE FROM cron_jobs`;
  await context.db.$executeRaw`DELETE FROM event_monthly_usage`;
  await context.db.$executeRaw`DELETE FROM notifications`;
  cronJobId = newId("cron");
  await context.db.$executeRaw`
    INSERT INTO cron_jobs (id, org_id, expression, timezone, destination, payload, status, created_at, updated_at)
    VALUES (${cronJobId}, ${org.orgId}, '* * * * *', 'UTC', 'https://example.com/c', 'c', 'Active', ${at(-90 * DAY_MS)}, ${at(-90 * DAY_MS)})`;
});

interface EventRow {
  status: string;
  scheduledTime: Date;
  sentAt?: Date;
  failedAt?: Date;
  updatedAt?: Date;
}

async function insertEvent(row: EventRow): Promise<string> {
  const id = newId("evt");
  await context.db.$executeRaw`
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at)
    VALUES (${id}, ${org.orgId}, 'https://example.com/e', 'p', ${row.scheduledTime}, ${row.status},
            ${row.sentAt ?? null}, ${row.failedAt ?? null}, ${at(-400 * DAY_MS)},
            ${row.updatedAt ?? row.sentAt ?? row.failedAt ?? row.scheduledTime})`;
  return id;
}

async function insertAttempt(eventId: string, attempt: number, when: Date): Promise<void> {
  await context.db.$executeRaw`
    INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
    VALUES (${eventId}, ${attempt}, ${when}, 503, 10, 'HTTP 503')`;
}

let runNumber = 0;
async function insertRun(status: string, createdAt: Date): Promise<string> {
  const id = newId("run");
  // One run per (job, scheduled time): give each its own minute.
  const scheduledFor = new Date(createdAt.getTime() - ++runNumber * 60_000);
  await context.db.$executeRaw`
    INSERT INTO cron_runs (id, cron_job_id, org_id, cron, scheduled_for, status, attempts, request_data, finished_at, created_at, updated_at)
    VALUES (${id}, ${cronJobId}, ${org.orgId}, '* * * * *', ${scheduledFor}, ${status}, 1, 'c',
            ${status === "Queued" ? null : createdAt}, ${createdAt}, ${createdAt})`;
  return id;
}

async function insertUsage(month: string, count: number): Promise<void> {
  await context.db.$executeRaw`
    INSERT INTO event_monthly_usage (org_id, month, count) VALUES (${org.orgId}, ${month}::date, ${count})`;
}

/** A notice of `type` about `subject`, written at `createdAt` and left in `status`. */
async function insertNotice(type: string, status: string, createdAt: Date, subject = newId("evt")): Promise<string> {
  const id = `ntf_${newId("evt").slice(4)}`;
  await context.db.$executeRaw`
    INSERT INTO notifications (id, org_id, kind, type, subject_id, webhook_id, url, data, dedupe_key, status, created_at, updated_at)
    VALUES (${id}, ${org.orgId}, 'webhook', ${type}, ${subject}, ${id}, 'https://example.com/n', '{}', ${id}, ${status},
            ${createdAt}, ${createdAt})`;
  return id;
}

const noticeIds = async () =>
  (await context.db.notification.findMany({ select: { id: true } })).map((row) => row.id).sort();

const eventIds = async () => (await context.db.event.findMany({ select: { id: true } })).map((row) => row.id).sort();
const runIds = async () => (await context.db.cronRun.findMany({ select: { id: true } })).map((row) => row.id).sort();
const attemptCount = () => context.db.eventAttempt.count();

function retention(options: { batchSize?: number; budgetMs?: number } = {}) {
  return createRetention({
    db: context.db,
    clock: fixedClock(NOW),
    config: { ...context.config, RETENTION_BATCH_SIZE: options.batchSize ?? context.config.RETENTION_BATCH_SIZE },
    logger: context.logger,
    ...(options.budgetMs === undefined ? {} : { budgetMs: options.budgetMs }),
  });
}

describe("retention", () => {
  it("deletes final events just outside the search window and keeps those just inside", async () => {
    const old = at(-60 * DAY_MS);
    const kept = [
      await insertEvent({ status: "Sent", scheduledTime: old, sentAt: at(-7 * DAY_MS + 1) }),
      await insertEvent({ status: "Failed To Send", scheduledTime: old, failedAt: at(-7 * DAY_MS + 1) }),
      await insertEvent({ status: "Failed To Queue", scheduledTime: old, failedAt: at(-7 * DAY_MS + 1) }),
      // Cancelled: kept while either its time or its last change is inside the window.
      await insertEvent({ status: "Cancelled", scheduledTime: old, updatedAt: at(-7 * DAY_MS + 1) }),
      await insertEvent({ status: "Cancelled", scheduledTime: at(-7 * DAY_MS + 1), updatedAt: old }),
      await insertEvent({ status: "Cancelled", scheduledTime: at(30 * DAY_MS), updatedAt: old }),
      // Not final: never deleted, however old.
      await insertEvent({ status: "Pending", scheduledTime: at(-300 * DAY_MS) }),
      await insertEvent({ status: "Queued", scheduledTime: at(-300 * DAY_MS) }),
    ];
    const deleted = [
      await insertEvent({ status: "Sent", scheduledTime: old, sentAt: at(-7 * DAY_MS - 1) }),
      await insertEvent({ status: "Failed To Send", scheduledTime: old, failedAt: at(-7 * DAY_MS - 1) }),
      await insertEvent({ status: "Failed To Queue", scheduledTime: old, failedAt: at(-7 * DAY_MS - 1) }),
      await insertEvent({ status: "Cancelled", scheduledTime: at(-7 * DAY_MS - 1), updatedAt: at(-7 * DAY_MS - 1) }),
    ];
    expect(searchCutoff).toEqual(at(-7 * DAY_MS));

    const report = await retention()();

    expect(report).toMatchObject({ events: deleted.length, complete: true });
    expect(await eventIds()).toEqual([...kept].sort());
  });

  it("takes a deleted event's attempts with it, and deletes attempts older than the history", async () => {
    const gone = await insertEvent({ status: "Sent", scheduledTime: at(-20 * DAY_MS), sentAt: at(-20 * DAY_MS) });
    await insertAttempt(gone, 1, at(-20 * DAY_MS));
    // A Pending event (edited far back, retried long ago) keeps only its recent attempts.
    const stays = await insertEvent({ status: "Queued", scheduledTime: at(-40 * DAY_MS) });
    await insertAttempt(stays, 1, at(-30 * DAY_MS - 1));
    await insertAttempt(stays, 2, at(-30 * DAY_MS + 1));
    expect(historyCutoff).toEqual(at(-30 * DAY_MS));

    const report = await retention()();

    expect(report).toMatchObject({ events: 1, eventAttempts: 1 });
    const left = await context.db.eventAttempt.findMany({ select: { eventId: true, attempt: true } });
    expect(left).toEqual([{ eventId: stays, attempt: 2 }]);
  });

  it("deletes final cron runs created before the history window and keeps the rest", async () => {
    const keptRuns = [
      await insertRun("Sent", at(-30 * DAY_MS + 1)),
      await insertRun("Failed To Send", at(-30 * DAY_MS + 1)),
      await insertRun("Queued", at(-90 * DAY_MS)),
    ];
    await insertRun("Sent", at(-30 * DAY_MS - 1));
    await insertRun("Failed To Send", at(-30 * DAY_MS - 1));

    const report = await retention()();

    expect(report).toMatchObject({ cronRuns: 2 });
    expect(await runIds()).toEqual([...keptRuns].sort());
    expect(await context.db.cronJob.count()).toBe(1);
  });

  it("keeps each cron job's newest run however old, and deletes Skipped runs as other final ones", async () => {
    const newest = await insertRun("Sent", at(-60 * DAY_MS));
    const skipped = await insertRun("Skipped", at(-60 * DAY_MS));
    const older = await insertRun("Failed To Send", at(-60 * DAY_MS));
    expect(new Set([newest, skipped, older]).size).toBe(3);

    const report = await retention()();

    expect(report).toMatchObject({ cronRuns: 2 });
    expect(await runIds()).toEqual([newest]);
  });

  it("keeps at most CRON_RUNS_KEPT_PER_JOB runs of a job, the newest, and never a Queued one", async () => {
    const runs: string[] = [];
    // Newest first (each run is a minute before the one made before it), all within the history window.
    for (let n = 0; n < 6; n++) runs.push(await insertRun(n === 4 ? "Queued" : "Sent", at(-DAY_MS)));

    const report = await createRetention({
      db: context.db,
      clock: fixedClock(NOW),
      config: { ...context.config, CRON_RUNS_KEPT_PER_JOB: 3 },
      logger: context.logger,
    })();

    expect(report).toMatchObject({ cronRuns: 2 });
    expect(await runIds()).toEqual([runs[0], runs[1], runs[2], runs[4]].sort());
  });

  it("keeps the quota counters of the last twelve months, so deleting events frees no quota", async () => {
    expect(monthsBefore(NOW, 12)).toBe("2030-06-01");
    await insertUsage("2030-05-01", 5); // 13 months before June 2031: deleted
    await insertUsage("2030-06-01", 6);
    await insertUsage("2031-06-01", 7);
    await insertUsage("2031-07-01", 8);
    // This month's events are old enough to be deleted; their month's count stays as it was.
    await insertEvent({ status: "Sent", scheduledTime: at(-10 * DAY_MS), sentAt: at(-10 * DAY_MS) });

    const report = await retention()();

    expect(report).toMatchObject({ events: 1, monthlyUsage: 1 });
    const usage = await context.db.eventMonthlyUsage.findMany({ orderBy: { month: "asc" } });
    expect(usage.map((row) => [row.month.toISOString().slice(0, 10), row.count])).toEqual([
      ["2030-06-01", 6],
      ["2031-06-01", 7],
      ["2031-07-01", 8],
    ]);
  });

  it("deletes ended notices of events after the search window, of cron runs and destinations after the history, never a Pending one", async () => {
    const kept = [
      await insertNotice("event.sent", "Sent", at(-7 * DAY_MS + 1)),
      await insertNotice("event.failed", "Failed", at(-7 * DAY_MS + 1)),
      await insertNotice("cron.run.sent", "Sent", at(-30 * DAY_MS + 1), newId("run")),
      await insertNotice("cron.run.failed", "Failed", at(-8 * DAY_MS), newId("run")),
      await insertNotice("destination.unhealthy", "Sent", at(-30 * DAY_MS + 1), "https://example.com"),
      // Still being sent (or retried): stays however old, until it ends.
      await insertNotice("event.failed", "Pending", at(-60 * DAY_MS)),
      await insertNotice("cron.run.failed", "Pending", at(-60 * DAY_MS), newId("run")),
    ];
    const deleted = [
      await insertNotice("event.sent", "Sent", at(-7 * DAY_MS - 1)),
      await insertNotice("event.failed", "Failed", at(-7 * DAY_MS - 1)),
      await insertNotice("cron.run.sent", "Failed", at(-30 * DAY_MS - 1), newId("run")),
      await insertNotice("cron.run.failed", "Sent", at(-30 * DAY_MS - 1), newId("run")),
      await insertNotice("destination.healthy", "Sent", at(-30 * DAY_MS - 1), "https://example.com"),
    ];

    const report = await retention()();

    expect(report).toMatchObject({ notices: deleted.length, complete: true });
    expect(await noticeIds()).toEqual([...kept].sort());
  });

  it("deletes ended quota notices with their month's counter (twelve months), not after the history window", async () => {
    expect(monthsBefore(NOW, 12)).toBe("2030-06-01");
    const subject = (month: string) => `${org.orgId}:${month}`;
    const kept = [
      // The counter of June 2030 is kept: its notices too, else a create into it could write them again.
      await insertNotice("quota.reached", "Sent", at(-380 * DAY_MS), subject("2030-06")),
      await insertNotice("quota.warning", "Sent", at(-200 * DAY_MS), subject("2031-01")),
      await insertNotice("quota.warning", "Pending", at(-600 * DAY_MS), subject("2029-09")),
    ];
    const deleted = [
      await insertNotice("quota.warning", "Sent", at(-400 * DAY_MS), subject("2030-05")),
      await insertNotice("quota.reached", "Failed", at(-600 * DAY_MS), subject("2029-09")),
    ];

    const report = await retention()();

    expect(report).toMatchObject({ notices: deleted.length, complete: true });
    expect(await noticeIds()).toEqual([...kept].sort());
  });

  it("deletes everything due in batches of two", async () => {
    const old = at(-40 * DAY_MS);
    for (let n = 0; n < 7; n++) {
      const id = await insertEvent(
        n % 2
          ? { status: "Sent", scheduledTime: old, sentAt: old }
          : { status: "Failed To Send", scheduledTime: old, failedAt: old },
      );
      await insertAttempt(id, 1, old);
    }
    for (let n = 0; n < 5; n++) await insertEvent({ status: "Cancelled", scheduledTime: old, updatedAt: old });
    const queued = await insertEvent({ status: "Queued", scheduledTime: old });
    for (let n = 1; n <= 5; n++) await insertAttempt(queued, n, old);
    const runs: string[] = [];
    for (let n = 0; n < 5; n++) runs.push(await insertRun("Sent", at(-40 * DAY_MS - n)));
    for (const month of ["2029-01-01", "2029-02-01", "2029-03-01"]) await insertUsage(month, 1);

    const report = await retention({ batchSize: 2 })();

    // The job's newest run (the first made here: the latest scheduledFor) stays: its catch-up starts from it.
    expect(report).toEqual({ events: 12, eventAttempts: 5, cronRuns: 4, monthlyUsage: 3, notices: 0, complete: true });
    expect(await eventIds()).toEqual([queued]);
    expect(await attemptCount()).toBe(0);
    expect(await runIds()).toEqual([runs[0]]);
    expect(await context.db.eventMonthlyUsage.count()).toBe(0);
    // A second run finds nothing left.
    expect(await retention({ batchSize: 2 })()).toEqual({
      events: 0,
      eventAttempts: 0,
      cronRuns: 0,
      monthlyUsage: 0,
      notices: 0,
      complete: true,
    });
  });

  it("stops when its time budget is used and leaves the rest for the next run", async () => {
    const old = at(-40 * DAY_MS);
    await insertEvent({ status: "Sent", scheduledTime: old, sentAt: old });
    const report = await retention({ budgetMs: 0 })();
    expect(report).toMatchObject({ events: 0, complete: false });
    expect(await eventIds()).toHaveLength(1);
    expect(await retention()()).toMatchObject({ events: 1, complete: true });
  });

  it("finds the rows to delete through indexes, not by reading whole tables", async () => {
    // Enough rows that a sequential scan would cost more than the index, were the index usable.
    await context.db.$executeRaw`
      INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, created_at, updated_at)
      SELECT 'evt_plan_' || n, ${org.orgId}, 'https://example.com/e', 'p', ${NOW}::timestamptz + n * interval '1 second',
             'Pending', NULL, ${NOW}, ${NOW}
      FROM generate_series(1, 20000) n`;
    await context.db.$executeRaw`ANALYZE events`;
    const plan = await context.db.$queryRaw<{ "QUERY PLAN": string }[]>`
      EXPLAIN SELECT id FROM events
      WHERE status IN ('Failed To Send', 'Failed To Queue') AND scheduled_time < ${searchCutoff} AND failed_at < ${searchCutoff}
      LIMIT 1000`;
    expect(plan.map((row) => row["QUERY PLAN"]).join("\n")).toMatch(/Index/);
  });

  it("finds the ended notices to delete through their index, not by reading the whole table", async () => {
    await context.db.$executeRaw`
      INSERT INTO notifications (id, org_id, kind, type, subject_id, webhook_id, url, data, dedupe_key, status, created_at, updated_at)
      SELECT 'ntf_plan_' || n, ${org.orgId}, 'callback', 'cron.run.sent', 'run_' || n, 'run_' || n || '.outcome',
             'https://example.com/n', '{}', 'plan:' || n, 'Sent', ${NOW}::timestamptz - n * interval '1 minute', ${NOW}
      FROM generate_series(1, 20000) n`;
    await context.db.$executeRaw`ANALYZE notifications`;
    const plan = await context.db.$queryRaw<{ "QUERY PLAN": string }[]>`
      EXPLAIN SELECT id FROM notifications
      WHERE type = ANY(${["event.sent", "event.failed"]}::text[]) AND status <> 'Pending' AND created_at < ${searchCutoff}
      LIMIT 1000`;
    expect(plan.map((row) => row["QUERY PLAN"]).join("\n")).toMatch(/notifications_ended_idx/);
  });
});
