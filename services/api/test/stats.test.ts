import { createCronJob, fixedClock, newId } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

// GET /api/stats over a history written with known times: bucket counts, lateness percentiles,
// totals, usage, failing destinations, scoping to the caller's organization, and its 400s.

const NOW = new Date("2030-05-10T12:30:00.000Z");
const clock = fixedClock(NOW);
const t = (time: string) => new Date(`2030-05-${time}Z`);

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;
let other: TestOrganization;

interface Attempt {
  at: string;
  status: number | null;
  error?: string;
}

/** An event as the lifecycle leaves it, with its attempts (times are `DDTHH:MM:SS.mmm` in May 2030). */
async function insertEvent(
  orgId: string,
  destination: string,
  due: string,
  outcome: { status: string; sentAt?: string; failedAt?: string },
  attempts: Attempt[],
) {
  const id = newId("evt");
  const sentAt = outcome.sentAt ? t(outcome.sentAt) : null;
  const failedAt = outcome.failedAt ? t(outcome.failedAt) : null;
  await context.db.$executeRaw`
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at)
    VALUES (${id}, ${orgId}, ${destination}, '{}', ${t(due)}, ${outcome.status}, ${sentAt}, ${failedAt}, ${t("01T00:00:00.000")}, ${t(due)})`;
  for (const [n, attempt] of attempts.entries()) {
    await context.db.$executeRaw`
      INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
      VALUES (${id}, ${n + 1}, ${t(attempt.at)}, ${attempt.status}, 40, ${attempt.error ?? null})`;
  }
}

const ok = (at: string): Attempt => ({ at, status: 200 });
const answered500 = (at: string): Attempt => ({ at, status: 500, error: "Receiver answered 500" });

/** A finished cron run of a job to `destination`. */
async function insertCronRun(
  orgId: string,
  cronJobId: string,
  scheduledFor: string,
  run: { status: string; attempts: number; finishedAt: string; error: string | null },
) {
  await context.db.$executeRaw`
    INSERT INTO cron_runs (id, cron_job_id, org_id, cron, scheduled_for, status, attempts, request_data, error, finished_at, created_at, updated_at)
    VALUES (${newId("run")}, ${cronJobId}, ${orgId}, '0 * * * *', ${t(scheduledFor)}, ${run.status}, ${run.attempts}, '{}',
            ${run.error}, ${t(run.finishedAt)}, ${t(scheduledFor)}, ${t(run.finishedAt)})`;
}

/** The same history for both organizations, so any leak across them would double the counts. */
async function insertHistory(orgId: string) {
  const A = "https://a.example.com/hook";
  // Before the 3-hour window of most tests: sent 5 ms late, on May 9th.
  await insertEvent(orgId, A, "09T23:59:59.990", { status: "Sent", sentAt: "09T23:59:59.995" }, [
    ok("09T23:59:59.995"),
  ]);
  // Hour 00: three sent, first attempts 20, 40, 100 ms and 90 s late; two failed attempts retried.
  await insertEvent(orgId, A, "10T00:10:00.000", { status: "Sent", sentAt: "10T00:10:00.020" }, [
    ok("10T00:10:00.020"),
  ]);
  await insertEvent(orgId, A, "10T00:20:00.000", { status: "Sent", sentAt: "10T00:20:03.040" }, [
    { at: "10T00:20:00.040", status: 503, error: "Receiver answered 503" },
    ok("10T00:20:03.040"),
  ]);
  await insertEvent(orgId, A, "09T23:59:00.000", { status: "Sent", sentAt: "10T00:00:30.000" }, [
    ok("10T00:00:30.000"),
  ]);
  // Four failed attempts from hour 00 into hour 01, where it ends Failed To Send.
  await insertEvent(
    orgId,
    "https://b.example.com/hook",
    "10T00:59:59.000",
    { status: "Failed To Send", failedAt: "10T01:00:17.100" },
    [
      answered500("10T00:59:59.100"),
      answered500("10T01:00:02.100"),
      answered500("10T01:00:07.100"),
      answered500("10T01:00:17.100"),
    ],
  );
  // Hour 01: one sent 10 ms late; one first attempt failed 30 ms late, its retry still to come.
  await insertEvent(orgId, A, "10T01:30:00.000", { status: "Sent", sentAt: "10T01:30:00.010" }, [
    ok("10T01:30:00.010"),
  ]);
  await insertEvent(orgId, "https://c.example.com/hook", "10T01:50:00.000", { status: "Queued" }, [
    { at: "10T01:50:00.030", status: null, error: "connect ECONNREFUSED" },
  ]);
  // Hour 02: an event never queued; two more failed first attempts (0 and 500 ms late), still Queued.
  await insertEvent(orgId, A, "10T01:00:00.000", { status: "Failed To Queue", failedAt: "10T02:10:00.000" }, []);
  await insertEvent(orgId, "https://e.example.com/hook", "10T02:40:00.000", { status: "Queued" }, [
    { at: "10T02:40:00.000", status: 404, error: "Receiver answered 404" },
  ]);
  await insertEvent(orgId, "https://f.example.com/hook", "10T02:41:00.000", { status: "Queued" }, [
    { at: "10T02:41:00.500", status: 502, error: "Receiver answered 502" },
  ]);
  // At the window's end (exclusive): not in it.
  await insertEvent(orgId, A, "10T03:00:00.000", { status: "Sent", sentAt: "10T03:00:00.000" }, [
    ok("10T03:00:00.000"),
  ]);
  // Hour 02: a cron run sent at its 2nd attempt and one failed after 4.
  const job = await createCronJob(
    context.db,
    { orgId, expression: "0 * * * *", timezone: "UTC", destination: "https://d.example.com/hook", payload: "{}" },
    NOW,
    3,
  );
  await insertCronRun(orgId, job.id, "10T02:00:00.000", {
    status: "Sent",
    attempts: 2,
    finishedAt: "10T02:00:03.000",
    error: null,
  });
  await insertCronRun(orgId, job.id, "10T02:30:00.000", {
    status: "Failed To Send",
    attempts: 4,
    finishedAt: "10T02:30:18.000",
    error: "Timed out after 10000 ms",
  });
  await context.db.$executeRaw`
    INSERT INTO event_monthly_usage (org_id, month, count) VALUES (${orgId}, '2030-05-01'::date, 12)`;
}

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "10000" });
  app = createApp(createTestApiDeps(context, clock).deps);
  org = await createTestOrganization(context);
  other = await createTestOrganization(context, "Other Org");
  await insertHistory(org.orgId);
  await insertHistory(other.orgId);
  // Only the other organization's: never counted for the first.
  await insertEvent(
    other.orgId,
    "https://other.example.com/hook",
    "10T00:05:00.000",
    { status: "Sent", sentAt: "10T00:05:09.000" },
    [answered500("10T00:05:00.000"), answered500("10T00:05:03.000"), ok("10T00:05:09.000")],
  );
});
afterAll(() => context.close());

const stats = (query = "", key = org.apiKey) => request(app).get(`/api/stats${query}`).set("x-api-key", key);
const bucket = (
  start: string,
  counts: { sent: number; failed: number; retried: number },
  p50: number | null,
  p99: number | null,
) => ({
  start: new Date(`2030-05-${start}Z`).toISOString(),
  ...counts,
  latenessMs: { p50, p99 },
});
const empty = (start: string) => bucket(start, { sent: 0, failed: 0, retried: 0 }, null, null);

const THREE_HOURS = "?from=2030-05-10T00:00:00Z&to=2030-05-10T03:00:00Z";

describe("GET /api/stats", () => {
  it("counts outcomes, retries and first-attempt lateness per hour, with totals", async () => {
    const response = await stats(THREE_HOURS);
    expect(response.status).toBe(200);
    expect(response.body.from).toBe("2030-05-10T00:00:00.000Z");
    expect(response.body.to).toBe("2030-05-10T03:00:00.000Z");
    expect(response.body.bucket).toBe("hour");
    expect(response.body.buckets).toEqual([
      // Lateness 20, 40, 100, 90000 ms: p50 and p99 are observed values (percentile_disc).
      bucket("10T00:00:00", { sent: 3, failed: 0, retried: 2 }, 40, 90_000),
      bucket("10T01:00:00", { sent: 1, failed: 1, retried: 2 }, 10, 30),
      bucket("10T02:00:00", { sent: 1, failed: 2, retried: 4 }, 0, 500),
    ]);
    expect(response.body.totals).toEqual({ sent: 5, failed: 3, retried: 8 });
  });

  it("lists the five destinations with the most failed attempts, latest failure first among equals", async () => {
    const response = await stats(THREE_HOURS);
    expect(response.body.failingDestinations).toEqual([
      { destination: "https://d.example.com/hook", failures: 5, lastError: "Timed out after 10000 ms" },
      { destination: "https://b.example.com/hook", failures: 4, lastError: "Receiver answered 500" },
      { destination: "https://f.example.com/hook", failures: 1, lastError: "Receiver answered 502" },
      { destination: "https://e.example.com/hook", failures: 1, lastError: "Receiver answered 404" },
      { destination: "https://c.example.com/hook", failures: 1, lastError: "connect ECONNREFUSED" },
    ]);
  });

  it("answers this UTC month's usage against the monthly limit, whatever the window", async () => {
    const response = await stats("?from=2030-04-01T00:00:00Z&to=2030-04-02T00:00:00Z");
    expect(response.body.usage).toEqual({ month: "2030-05", used: 12, limit: 1000 });
    expect(response.body.totals).toEqual({ sent: 0, failed: 0, retried: 0 });
    expect(response.body.failingDestinations).toEqual([]);
  });

  it("counts in partial first and last buckets only what happened inside the window", async () => {
    const response = await stats("?from=2030-05-10T00:30:00Z&to=2030-05-10T01:30:00Z");
    expect(response.body.buckets).toEqual([
      bucket("10T00:00:00", { sent: 0, failed: 0, retried: 1 }, 100, 100),
      bucket("10T01:00:00", { sent: 0, failed: 1, retried: 2 }, null, null),
    ]);
  });

  it("defaults to the last 24 hours in hour buckets, every bucket present oldest first", async () => {
    const response = await stats();
    expect(response.status).toBe(200);
    expect(response.body.from).toBe("2030-05-09T12:30:00.000Z");
    expect(response.body.to).toBe(NOW.toISOString());
    expect(response.body.bucket).toBe("hour");
    const starts = (response.body.buckets as { start: string }[]).map((b) => b.start);
    expect(starts).toHaveLength(25);
    expect(starts[0]).toBe("2030-05-09T12:00:00.000Z");
    expect(starts.at(-1)).toBe("2030-05-10T12:00:00.000Z");
    expect(response.body.buckets[1]).toEqual(empty("09T13:00:00"));
    // May 9th's event and the one at 03:00 are inside the last 24 hours.
    expect(response.body.totals).toEqual({ sent: 7, failed: 3, retried: 8 });
  });

  it("buckets by UTC day", async () => {
    const response = await stats("?from=2030-05-09T00:00:00Z&to=2030-05-11T00:00:00Z&bucket=day");
    expect(response.status).toBe(200);
    expect(response.body.buckets).toEqual([
      bucket("09T00:00:00", { sent: 1, failed: 0, retried: 0 }, 5, 5),
      // First attempts 0, 0 (03:00), 10, 20, 30, 40, 100, 500 and 90000 ms late.
      bucket("10T00:00:00", { sent: 6, failed: 3, retried: 8 }, 30, 90_000),
    ]);
  });

  it("takes `to` alone as the end of a 24-hour window", async () => {
    const response = await stats("?to=2030-05-10T03:00:00Z");
    expect(response.body.from).toBe("2030-05-09T03:00:00.000Z");
    expect(response.body.buckets).toHaveLength(24);
    expect(response.body.totals).toEqual({ sent: 6, failed: 3, retried: 8 });
  });

  it("never counts another organization's history", async () => {
    const mine = await stats(THREE_HOURS);
    const theirs = await stats(THREE_HOURS, other.apiKey);
    // The other organization has the same history plus one event sent at its 3rd attempt.
    expect(theirs.body.totals).toEqual({ sent: 6, failed: 3, retried: 10 });
    expect(mine.body.totals).toEqual({ sent: 5, failed: 3, retried: 8 });
    expect(mine.body.failingDestinations.map((d: { destination: string }) => d.destination)).not.toContain(
      "https://other.example.com/hook",
    );
  });

  it("accepts a window of exactly 31 days", async () => {
    const response = await stats("?from=2030-04-09T12:00:00Z&to=2030-05-10T12:00:00Z&bucket=day");
    expect(response.status).toBe(200);
    expect(response.body.buckets).toHaveLength(32);
  });

  it("refuses a bad query with 400 and one sentence", async () => {
    const cases: [string, string][] = [
      ["?from=yesterday", "Invalid date: from"],
      ["?to=2030-05-10T03:00:00", "Invalid date: to"],
      ["?from=2030-05-10T03:00:00Z&to=2030-05-10T03:00:00Z", "'from' must be before 'to'"],
      ["?from=2030-05-10T04:00:00Z&to=2030-05-10T03:00:00Z", "'from' must be before 'to'"],
      ["?from=2030-04-09T11:59:59Z&to=2030-05-10T12:00:00Z", "The window from 'from' to 'to' must be at most 31 days"],
      ["?from=2030-01-01T00:00:00Z", "The window from 'from' to 'to' must be at most 31 days"],
      ["?bucket=week", "'bucket' must be one of 'hour' or 'day'"],
      ["?bucket=hour&bucket=day", "Query parameter 'bucket' must be given only once"],
      ["?foo=1", "Unknown query parameter 'foo'"],
    ];
    for (const [query, message] of cases) {
      const response = await stats(query);
      expect({ query, status: response.status, body: response.body }).toEqual({
        query,
        status: 400,
        body: { message },
      });
    }
  });

  it("requires an API key", async () => {
    const response = await request(app).get("/api/stats");
    expect({ status: response.status, body: response.body }).toEqual({
      status: 401,
      body: { message: "Missing API key" },
    });
  });
});

describe("GET /api/stats keeps settled hours", () => {
  // Settled: ended more than DELIVERY_TIMEOUT_MS + the longest retry delay + 5 min ago (5 min 20 s).
  const start = new Date("2030-05-20T10:02:00.000Z");
  const sentAt = async (orgId: string, time: string) =>
    insertEvent(orgId, "https://a.example.com/hook", time, { status: "Sent", sentAt: time }, [ok(time)]);
  const sentPerBucket = async (target: ReturnType<typeof createApp>, key: string, query: string) => {
    const response = await request(target).get(`/api/stats${query}`).set("x-api-key", key);
    expect(response.status).toBe(200);
    return (response.body.buckets as { sent: number }[]).map((b) => b.sent);
  };

  it("answers a settled hour as first computed, and recomputes the hours still open", async () => {
    const movingClock = fixedClock(start);
    const cached = createApp(createTestApiDeps(context, movingClock).deps);
    const owner = await createTestOrganization(context, "Cached Org");
    const window = "?from=2030-05-20T08:00:00Z&to=2030-05-20T10:00:00Z";
    await sentAt(owner.orgId, "20T08:30:00.000");
    await sentAt(owner.orgId, "20T09:30:00.000");
    expect(await sentPerBucket(cached, owner.apiKey, window)).toEqual([1, 1]);

    // Recorded late into both hours: only the open one (09:00, ended 2 min ago) shows it.
    await sentAt(owner.orgId, "20T08:40:00.000");
    await sentAt(owner.orgId, "20T09:40:00.000");
    expect(await sentPerBucket(cached, owner.apiKey, window)).toEqual([1, 2]);
    // An app that has not seen the hours reads both from the history.
    const fresh = createApp(createTestApiDeps(context, movingClock).deps);
    expect(await sentPerBucket(fresh, owner.apiKey, window)).toEqual([2, 2]);

    // Once 09:00 has settled it is computed one last time, then kept.
    movingClock.set(new Date("2030-05-20T10:06:00.000Z"));
    expect(await sentPerBucket(cached, owner.apiKey, window)).toEqual([1, 2]);
    await sentAt(owner.orgId, "20T09:50:00.000");
    expect(await sentPerBucket(cached, owner.apiKey, window)).toEqual([1, 2]);
  });

  it("computes the partial first and last hours of a window every time", async () => {
    const cached = createApp(createTestApiDeps(context, fixedClock(start)).deps);
    const owner = await createTestOrganization(context, "Edges Org");
    const window = "?from=2030-05-20T07:30:00Z&to=2030-05-20T08:30:00Z";
    await sentAt(owner.orgId, "20T07:45:00.000");
    await sentAt(owner.orgId, "20T08:15:00.000");
    expect(await sentPerBucket(cached, owner.apiKey, window)).toEqual([1, 1]);
    await sentAt(owner.orgId, "20T07:50:00.000");
    await sentAt(owner.orgId, "20T08:20:00.000");
    expect(await sentPerBucket(cached, owner.apiKey, window)).toEqual([2, 2]);
  });

  it("keeps settled days as well, apart from the hours", async () => {
    const cached = createApp(createTestApiDeps(context, fixedClock(new Date("2030-05-22T10:00:00.000Z"))).deps);
    const owner = await createTestOrganization(context, "Days Org");
    const days = "?from=2030-05-20T00:00:00Z&to=2030-05-23T00:00:00Z&bucket=day";
    await sentAt(owner.orgId, "20T12:00:00.000");
    await sentAt(owner.orgId, "22T09:00:00.000");
    expect(await sentPerBucket(cached, owner.apiKey, days)).toEqual([1, 0, 1]);
    await sentAt(owner.orgId, "21T12:00:00.000");
    await sentAt(owner.orgId, "22T09:30:00.000");
    // May 21st settled when it was first asked for (as empty); May 22nd is still open.
    expect(await sentPerBucket(cached, owner.apiKey, days)).toEqual([1, 0, 2]);
    // Its hours are kept on their own: the hour 12:00 of May 21st is computed for the first time.
    const hours = "?from=2030-05-21T12:00:00Z&to=2030-05-21T13:00:00Z";
    expect(await sentPerBucket(cached, owner.apiKey, hours)).toEqual([1]);
  });

  it("answers the same figures from kept hours as from the history, failing destinations included", async () => {
    const cached = createApp(createTestApiDeps(context, clock).deps);
    const first = await stats(THREE_HOURS);
    const fromKept = await request(cached).get(`/api/stats${THREE_HOURS}`).set("x-api-key", org.apiKey);
    const again = await request(cached).get(`/api/stats${THREE_HOURS}`).set("x-api-key", org.apiKey);
    expect(fromKept.body).toEqual(first.body);
    expect(again.body).toEqual(first.body);
  });
});
