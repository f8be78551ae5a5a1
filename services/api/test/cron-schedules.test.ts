import { CRON_LEAD_MS, type CronJobData, cronSchedulerId, fixedClock } from "@punctual/core";
import type { Queue } from "bullmq";
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

// Complete recurring schedules in the API (contract §10.4): the timing fields of cron job create and
// edit (one sentence per mistake, the merged timing judged as a whole, nothing half-written), what
// the records show, the Completed rule, the limit, the preview, and the job scheduler in Redis.

const EITHER = "Give either 'expression' or 'every'";
const EVERY_INVALID =
  "'every' must be an ISO 8601 duration of weeks, days, hours, minutes and seconds, such as PT30S, PT5M or P1D";
const EVERY_TOO_SHORT = "'every' must be at least 1 second (PT1S)";
const EVERY_TOO_LONG = "'every' must be at most 365 days (P365D)";
const timeInvalid = (field: string) => `'${field}' must be an ISO 8601 time, e.g. 2026-12-01T10:00:00Z`;
const zoneRequired = (field: string) =>
  `'${field}' must include a time zone, e.g. 2026-12-01T10:00:00Z or 2026-12-01T10:00:00+02:00`;
const END_NOT_AFTER_START = "'endAt' must be after 'startAt'";
const END_PAST = "'endAt' must be in the future";
const NEVER_FIRES = "The schedule never fires before 'endAt'";
const MAX_RUNS = "'maxRuns' must be an integer from 1 to 1000000000";
const CATCH_UP = "'catchUp' must be one of 'skip', 'latest' or 'all'";
const CATCH_UP_WINDOW = "'catchUpWindowMs' must be an integer from 1000 to 604800000 (milliseconds)";
const OVERLAP = "'overlap' must be one of 'allow', 'skip' or 'buffer'";
const JITTER = "'jitterMs' must be an integer from 0 to 3600000 (milliseconds)";
const STATUS = "'status' must be one of 'Active' or 'Disabled'";
const COMPLETED = "A Completed cron job cannot be edited";
const LIMIT = "Cron job limit of 3 reached for this organization";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const base = { payload: '{"report":"daily"}', destination: "https://example.com/cron" };
/** The timing fields of a job given an expression alone. */
const DEFAULTS = {
  every: null,
  startAt: null,
  endAt: null,
  maxRuns: null,
  catchUp: "skip",
  catchUpWindowMs: 3_600_000,
  overlap: "allow",
  jitterMs: 0,
};

let context: TestContext;
let app: ReturnType<typeof createApp>;
let cronQueue: Queue<CronJobData>;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000" });
  const api = createTestApiDeps(context);
  app = createApp(api.deps);
  cronQueue = api.cronQueue;
});
afterAll(() => context.close());

type Json = Record<string, unknown>;

const post = (org: TestOrganization, body: Json) =>
  request(app).post("/api/cronjobs").set("x-api-key", org.apiKey).send(body);
const put = (org: TestOrganization, id: string, body: Json) =>
  request(app).put(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey).send(body);
const get = (org: TestOrganization, id: string) => request(app).get(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey);

async function create(org: TestOrganization, fields: Json): Promise<Json & { id: string }> {
  const response = await post(org, { ...base, ...fields });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function edit(org: TestOrganization, id: string, changes: Json): Promise<Json & { id: string }> {
  const response = await put(org, id, changes);
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body;
}

async function expectError(call: PromiseLike<request.Response>, status: number, message: string, label: unknown) {
  const response = await call;
  expect({ label, status: response.status, body: response.body }).toEqual({ label, status, body: { message } });
}

const iso = (millis: number) => new Date(millis).toISOString();
const scheduler = (id: string) => cronQueue.getJobScheduler(cronSchedulerId(id));
async function pendingFirings(id: string) {
  const delayed = await cronQueue.getDelayed();
  return delayed.filter((job) => job.id?.startsWith(`repeat:${cronSchedulerId(id)}:`));
}
async function storedRow(id: string) {
  const [row] = await context.db.$queryRaw<Json[]>`
    SELECT expression, timezone, every, every_ms, start_at, end_at, max_runs, catch_up, catch_up_window_ms, overlap,
      jitter_ms, schedule_since, status
    FROM cron_jobs WHERE id = ${id}`;
  return row as Json;
}
const complete = (id: string) => context.db.$executeRaw`UPDATE cron_jobs SET status = 'Completed' WHERE id = ${id}`;

/** Refusals of single fields: the same at create and at edit. */
const FIELD_REFUSALS: [fields: Json, message: string][] = [
  [{ every: "5m" }, EVERY_INVALID],
  [{ every: "P1M" }, EVERY_INVALID], // months have no fixed length
  [{ every: "P1Y" }, EVERY_INVALID],
  [{ every: "PT0S" }, EVERY_INVALID],
  [{ every: "" }, EVERY_INVALID],
  [{ every: 300 }, EVERY_INVALID],
  [{ every: "PT0.5S" }, EVERY_TOO_SHORT],
  [{ every: "P366D" }, EVERY_TOO_LONG],
  [{ startAt: "tomorrow" }, timeInvalid("startAt")],
  [{ startAt: "2099-02-30T10:00:00Z" }, timeInvalid("startAt")],
  [{ startAt: 4102444800000 }, timeInvalid("startAt")],
  [{ startAt: "2099-01-01T10:00:00" }, zoneRequired("startAt")],
  [{ endAt: "later" }, timeInvalid("endAt")],
  [{ endAt: "2099-01-01T10:00:00" }, zoneRequired("endAt")],
  [{ maxRuns: 0 }, MAX_RUNS],
  [{ maxRuns: -3 }, MAX_RUNS],
  [{ maxRuns: 1.5 }, MAX_RUNS],
  [{ maxRuns: "3" }, MAX_RUNS],
  [{ maxRuns: 1_000_000_001 }, MAX_RUNS],
  [{ catchUp: "none" }, CATCH_UP],
  [{ catchUp: "ALL" }, CATCH_UP],
  [{ catchUp: null }, CATCH_UP],
  [{ catchUpWindowMs: 999 }, CATCH_UP_WINDOW],
  [{ catchUpWindowMs: 604_800_001 }, CATCH_UP_WINDOW],
  [{ catchUpWindowMs: "3600000" }, CATCH_UP_WINDOW],
  [{ catchUpWindowMs: null }, CATCH_UP_WINDOW],
  [{ overlap: "queue" }, OVERLAP],
  [{ overlap: null }, OVERLAP],
  [{ jitterMs: -1 }, JITTER],
  [{ jitterMs: 3_600_001 }, JITTER],
  [{ jitterMs: 2.5 }, JITTER],
  [{ jitterMs: null }, JITTER],
];

describe("cron job create refuses a bad timing with one sentence per mistake", () => {
  let org: TestOrganization;
  beforeAll(async () => {
    org = await createTestOrganization(context);
  });

  it.each(FIELD_REFUSALS)("refuses %j", async (fields, message) => {
    await expectError(post(org, { ...base, expression: "0 * * * *", ...fields }), 400, message, fields);
  });

  it("refuses both an expression and an interval, or neither", async () => {
    await expectError(post(org, { ...base, expression: "0 * * * *", every: "PT1H" }), 400, EITHER, "both");
    await expectError(post(org, base), 400, EITHER, "neither");
    // A create takes no null: a job has nothing to clear yet.
    await expectError(post(org, { ...base, every: null }), 400, EVERY_INVALID, "null every");
    await expectError(post(org, { ...base, every: "PT1H", startAt: null }), 400, timeInvalid("startAt"), "null");
    await expectError(post(org, { ...base, every: "PT1H", maxRuns: null }), 400, MAX_RUNS, "null maxRuns");
  });

  it("refuses a window that ends before it starts, is over, or holds no firing", async () => {
    const soon = iso(Date.now() + 30 * MINUTE);
    const cases: [Json, string][] = [
      [
        { expression: "0 * * * *", startAt: "2099-01-02T00:00:00Z", endAt: "2099-01-01T00:00:00Z" },
        END_NOT_AFTER_START,
      ],
      [
        { expression: "0 * * * *", startAt: "2099-01-01T00:00:00Z", endAt: "2099-01-01T00:00:00Z" },
        END_NOT_AFTER_START,
      ],
      // Equal instants written in two zones.
      [{ every: "PT1M", startAt: "2099-01-01T02:00:00+02:00", endAt: "2099-01-01T00:00:00.000Z" }, END_NOT_AFTER_START],
      [{ expression: "0 * * * *", endAt: "2020-01-01T00:00:00Z" }, END_PAST],
      [{ every: "PT1M", startAt: "2019-01-01T00:00:00Z", endAt: "2020-01-01T00:00:00Z" }, END_PAST],
      // January 1st only, in a window of February.
      [{ expression: "0 0 1 1 *", startAt: "2099-02-01T00:00:00Z", endAt: "2099-03-01T00:00:00Z" }, NEVER_FIRES],
      // An hourly interval first fires an hour after its creation.
      [{ every: "PT1H", endAt: soon }, NEVER_FIRES],
      // Every day from a start: the first firing is the start, the next a day later.
      [{ every: "P1D", startAt: "2020-01-01T00:00:00Z", endAt: iso(nextMidnight() - MINUTE) }, NEVER_FIRES],
    ];
    for (const [fields, message] of cases) await expectError(post(org, { ...base, ...fields }), 400, message, fields);
    expect(await context.db.cronJob.count({ where: { orgId: org.orgId } })).toBe(0);
  });
});

/** The next UTC midnight, at least a minute away. */
function nextMidnight(): number {
  const day = 24 * HOUR;
  return Math.floor((Date.now() + MINUTE) / day) * day + day;
}

describe("cron job create stores and answers every timing field", () => {
  it("stores an interval with its window, limit and policies, and answers them", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, {
      every: "PT15M",
      timezone: "Europe/Paris",
      startAt: "2099-06-01T08:00:00+02:00",
      endAt: "2099-06-30T18:00:00Z",
      maxRuns: 12,
      catchUp: "all",
      catchUpWindowMs: 7_200_000,
      overlap: "buffer",
      jitterMs: 30_000,
    });
    expect(job).toMatchObject({
      status: "Active",
      nextExecutionStatus: "Pending",
      expression: null,
      every: "PT15M",
      timezone: "Europe/Paris",
      startAt: "2099-06-01T06:00:00.000Z",
      endAt: "2099-06-30T18:00:00.000Z",
      maxRuns: 12,
      catchUp: "all",
      catchUpWindowMs: 7_200_000,
      overlap: "buffer",
      jitterMs: 30_000,
      // An interval with a start fires first at it.
      nextExecutionDate: "2099-06-01T06:00:00.000Z",
      history: [],
    });
    expect(await storedRow(job.id)).toEqual({
      expression: null,
      timezone: "Europe/Paris",
      every: "PT15M",
      every_ms: 900_000n,
      start_at: new Date("2099-06-01T06:00:00.000Z"),
      end_at: new Date("2099-06-30T18:00:00.000Z"),
      max_runs: 12,
      catch_up: "all",
      catch_up_window_ms: 7_200_000,
      overlap: "buffer",
      jitter_ms: 30_000,
      schedule_since: new Date(job.createdAt as string),
      status: "Active",
    });
    const { history: _history, ...record } = job;
    expect((await get(org, job.id)).body).toEqual({ ...record, history: [] });
    const listed = await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey);
    expect(listed.body).toEqual([record]);
  });

  it("answers the defaults (and null) for a job given an expression alone", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { expression: "0 6 * * *" });
    expect(job).toMatchObject({ expression: "0 6 * * *", ...DEFAULTS });
    expect(await storedRow(job.id)).toMatchObject({
      every: null,
      every_ms: null,
      start_at: null,
      end_at: null,
      max_runs: null,
      catch_up: "skip",
      catch_up_window_ms: 3_600_000,
      overlap: "allow",
      jitter_ms: 0,
    });
  });

  it("runs an interval without startAt first one interval after its creation", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { every: "PT10M" });
    expect(job.nextExecutionDate).toBe(iso(Date.parse(job.createdAt as string) + 10 * MINUTE));
    // P1D is 24 hours, whatever the zone's clocks do.
    const daily = await create(org, { every: "P1D", timezone: "America/New_York" });
    expect(daily.nextExecutionDate).toBe(iso(Date.parse(daily.createdAt as string) + 24 * HOUR));
  });

  it("takes six fields, seconds first, and a window for an expression", async () => {
    const org = await createTestOrganization(context);
    const seconds = await create(org, { expression: "*/10  * * * * *" });
    expect(seconds.expression).toBe("*/10 * * * * *");
    const next = Date.parse(seconds.nextExecutionDate as string);
    expect(next % 10_000).toBe(0);
    expect(next - Date.parse(seconds.createdAt as string)).toBeLessThanOrEqual(10_000);
    const windowed = await create(org, {
      expression: "0 9 * * *",
      timezone: "Europe/Paris",
      startAt: "2099-03-10T12:00:00Z",
      endAt: "2099-03-20T00:00:00Z",
    });
    expect(windowed.nextExecutionDate).toBe("2099-03-11T08:00:00.000Z");
  });
});

describe("cron job edit", () => {
  it.each(FIELD_REFUSALS)("refuses %j, changing nothing", async (fields, message) => {
    const org = await createTestOrganization(context);
    const job = await create(org, { expression: "0 * * * *" });
    const before = (await get(org, job.id)).body;
    await expectError(put(org, job.id, { payload: '{"changed":true}', ...fields }), 400, message, fields);
    expect((await get(org, job.id)).body).toEqual(before);
  });

  it("judges the merged timing as a whole, changing nothing when refused", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, {
      expression: "0 * * * *",
      startAt: "2099-01-10T00:00:00Z",
      endAt: "2099-02-10T00:00:00Z",
    });
    const before = (await get(org, job.id)).body;
    const row = await storedRow(job.id);
    const soon = iso(Date.now() + 30 * MINUTE);
    const cases: [Json, string][] = [
      [{ expression: "0 6 * * *", every: "PT1H" }, EITHER],
      [{ expression: null }, EITHER],
      [{ expression: null, every: null }, EITHER],
      // Against the job's own startAt.
      [{ endAt: "2099-01-09T00:00:00Z" }, END_NOT_AFTER_START],
      [{ startAt: "2099-03-01T00:00:00Z" }, END_NOT_AFTER_START],
      [{ startAt: null, endAt: "2020-01-01T00:00:00Z" }, END_PAST],
      [{ expression: "0 0 1 1 *" }, NEVER_FIRES],
      [{ every: "PT1H", startAt: null, endAt: soon }, NEVER_FIRES],
      [{ status: "Completed" }, STATUS],
    ];
    for (const [fields, message] of cases) {
      await expectError(put(org, job.id, { payload: '{"changed":true}', ...fields }), 400, message, fields);
    }
    expect((await get(org, job.id)).body).toEqual(before);
    expect(await storedRow(job.id)).toEqual(row);
  });

  it("switches between an expression and an interval", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { expression: "0 6 * * *" });

    const interval = await edit(org, job.id, { every: "PT10M" });
    expect(interval).toMatchObject({ expression: null, every: "PT10M" });
    expect(interval.nextExecutionDate).toBe(iso(Date.parse(interval.updatedAt as string) + 10 * MINUTE));
    expect(await storedRow(job.id)).toMatchObject({ expression: null, every: "PT10M", every_ms: 600_000n });

    const expression = await edit(org, job.id, { expression: "30 7 * * 1" });
    expect(expression).toMatchObject({ expression: "30 7 * * 1", every: null });
    expect(await storedRow(job.id)).toMatchObject({ expression: "30 7 * * 1", every: null, every_ms: null });

    // With the other one cleared in the same edit, either way round.
    expect(await edit(org, job.id, { expression: null, every: "PT1H" })).toMatchObject({
      expression: null,
      every: "PT1H",
    });
    expect(await edit(org, job.id, { every: null, expression: "0 12 * * *" })).toMatchObject({
      expression: "0 12 * * *",
      every: null,
    });
    // Clearing what the job does not have changes nothing.
    expect(await edit(org, job.id, { every: null })).toMatchObject({ expression: "0 12 * * *", every: null });
  });

  it("clears startAt, endAt and maxRuns with null, and replaces what is given", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, {
      every: "PT1H",
      startAt: "2099-01-01T00:00:00Z",
      endAt: "2099-12-31T00:00:00Z",
      maxRuns: 5,
      catchUp: "latest",
      overlap: "skip",
      jitterMs: 1000,
    });
    const edited = await edit(org, job.id, { startAt: null, endAt: null, maxRuns: null, catchUp: "all" });
    expect(edited).toMatchObject({
      every: "PT1H",
      startAt: null,
      endAt: null,
      maxRuns: null,
      catchUp: "all",
      catchUpWindowMs: 3_600_000,
      overlap: "skip",
      jitterMs: 1000,
    });
    expect(await storedRow(job.id)).toMatchObject({ start_at: null, end_at: null, max_runs: null, catch_up: "all" });
    expect(
      await edit(org, job.id, { maxRuns: 3, catchUpWindowMs: 60_000, overlap: "allow", jitterMs: 0 }),
    ).toMatchObject({ maxRuns: 3, catchUpWindowMs: 60_000, overlap: "allow", jitterMs: 0 });
  });

  it("sets the schedule again only when its firing times change or it is enabled again", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { every: "PT20M" });
    const since = (await storedRow(job.id)).schedule_since;
    const next = job.nextExecutionDate;
    const found = await scheduler(job.id);

    // Policies, maxRuns and a timing given as it is keep the phase of the interval.
    for (const changes of [
      { jitterMs: 5000, overlap: "skip", catchUp: "latest", maxRuns: 10 },
      { every: "PT20M", timezone: "UTC" },
      { payload: "{}" },
    ]) {
      const edited = await edit(org, job.id, changes);
      expect(edited.nextExecutionDate).toBe(next);
      expect((await storedRow(job.id)).schedule_since).toEqual(since);
      expect(await scheduler(job.id)).toEqual(found);
    }

    // New firing times start from the edit.
    const moved = await edit(org, job.id, { every: "PT30M" });
    expect((await storedRow(job.id)).schedule_since).toEqual(new Date(moved.updatedAt as string));
    expect(moved.nextExecutionDate).toBe(iso(Date.parse(moved.updatedAt as string) + 30 * MINUTE));

    await edit(org, job.id, { status: "Disabled" });
    const enabled = await edit(org, job.id, { status: "Active" });
    expect((await storedRow(job.id)).schedule_since).toEqual(new Date(enabled.updatedAt as string));
    expect(enabled.nextExecutionDate).toBe(iso(Date.parse(enabled.updatedAt as string) + 30 * MINUTE));
  });

  it("refuses to enable a job whose window is over", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { expression: "0 * * * *", endAt: "2099-01-01T00:00:00Z" });
    await edit(org, job.id, { status: "Disabled" });
    await context.db.$executeRaw`UPDATE cron_jobs SET end_at = '2020-01-01T00:00:00Z' WHERE id = ${job.id}`;
    await expectError(put(org, job.id, { status: "Active" }), 400, END_PAST, "enable");
    // Given a new window in the same edit, it is enabled.
    expect(await edit(org, job.id, { status: "Active", endAt: null })).toMatchObject({ status: "Active", endAt: null });
  });
});

describe("a Completed cron job", () => {
  it("shows Completed, has no next execution, and shows Skipped runs in its history", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { expression: "0 * * * *", maxRuns: 2 });
    await context.db.cronRun.create({
      data: {
        id: "run_skipped_1",
        cronJobId: job.id,
        orgId: org.orgId,
        cron: "0 * * * *",
        scheduledFor: new Date(Date.now() - HOUR),
        status: "Skipped",
        requestData: base.payload,
      },
    });
    await complete(job.id);
    const found = (await get(org, job.id)).body;
    expect(found).toMatchObject({ status: "Completed", nextExecutionStatus: "Completed", maxRuns: 2 });
    expect(found).not.toHaveProperty("nextExecutionDate");
    expect(found.history).toEqual([expect.objectContaining({ id: "run_skipped_1", status: "Skipped" })]);
  });

  it("refuses every edit with 409 (after the body's own checks) and can be deleted", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { every: "PT1H" });
    await complete(job.id);
    const before = (await get(org, job.id)).body;
    for (const changes of [{ payload: "{}" }, { status: "Active" }, { status: "Disabled" }, { maxRuns: 5 }]) {
      await expectError(put(org, job.id, changes), 409, COMPLETED, changes);
    }
    await expectError(put(org, job.id, { maxRuns: 0 }), 400, MAX_RUNS, "bad body");
    expect((await get(org, job.id)).body).toEqual(before);
    expect((await request(app).delete(`/api/cronjobs/${job.id}`).set("x-api-key", org.apiKey)).status).toBe(204);
  });

  it("no longer counts toward the limit; a Disabled one still does", async () => {
    expect(context.config.MAX_CRON_JOBS_PER_ORG).toBe(3);
    const org = await createTestOrganization(context);
    const jobs = [];
    for (const n of [1, 2, 3]) jobs.push(await create(org, { every: `PT${n}H` }));
    await expectError(post(org, { ...base, every: "PT4H" }), 403, LIMIT, "full");
    await edit(org, (jobs[0] as { id: string }).id, { status: "Disabled" });
    await expectError(post(org, { ...base, every: "PT4H" }), 403, LIMIT, "a Disabled job counts");
    await complete((jobs[1] as { id: string }).id);
    await create(org, { every: "PT4H" });
    await expectError(post(org, { ...base, every: "PT5H" }), 403, LIMIT, "full again");
    const listed = await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey);
    expect(listed.body.map((job: Json) => job.status)).toEqual(["Disabled", "Completed", "Active", "Active"]);
  });
});

describe("the job scheduler in Redis", () => {
  it("holds an interval as `every <ms> from <first firing>`, with the window, firing when the record says", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, {
      every: "PT5M",
      startAt: "2099-01-01T00:02:00Z",
      endAt: "2099-01-02T00:00:00Z",
    });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} every 300000 from ${Date.parse("2099-01-01T00:02:00Z")}`,
      tz: "UTC",
      startDate: Date.parse("2099-01-01T00:02:00Z"),
      endDate: Date.parse("2099-01-02T00:00:00Z"),
      template: { data: { cronJobId: job.id } },
    });
    expect(found?.every).toBeUndefined();
    // Its job is due a lead before the firing (schedule.ts).
    expect(iso((found?.next as number) + CRON_LEAD_MS)).toBe(job.nextExecutionDate);
    expect(await pendingFirings(job.id)).toHaveLength(1);
  });

  it("holds an interval without startAt from one interval after its creation", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { every: "PT10M" });
    const firstAt = Date.parse(job.createdAt as string) + 10 * MINUTE;
    const found = await scheduler(job.id);
    expect(found).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} every 600000 from ${firstAt}`,
      next: firstAt - CRON_LEAD_MS,
    });
    expect(found?.startDate).toBeUndefined();
    expect(found?.endDate).toBeUndefined();
  });

  it("holds a six-field expression and an expression's window", async () => {
    const org = await createTestOrganization(context);
    const seconds = await create(org, { expression: "30 */5 * * * *", timezone: "Asia/Tokyo" });
    expect(await scheduler(seconds.id)).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} 30 */5 * * * *`,
      tz: "Asia/Tokyo",
    });
    expect(iso(((await scheduler(seconds.id))?.next as number) + CRON_LEAD_MS)).toBe(seconds.nextExecutionDate);
    const windowed = await create(org, { expression: "0 9 * * *", startAt: "2099-05-01T10:00:00Z" });
    const found = await scheduler(windowed.id);
    expect(found).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} 0 9 * * *`,
      startDate: Date.parse("2099-05-01T10:00:00Z"),
    });
    expect(iso((found?.next as number) + CRON_LEAD_MS)).toBe("2099-05-02T09:00:00.000Z");
    expect(windowed.nextExecutionDate).toBe("2099-05-02T09:00:00.000Z");
  });

  it("is replaced when the edit switches the job between expression and interval, one firing waiting", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { expression: "0 6 * * *" });
    const interval = await edit(org, job.id, { every: "PT15M", endAt: "2099-01-01T00:00:00Z" });
    const firstAt = Date.parse(interval.updatedAt as string) + 15 * MINUTE;
    let found = await scheduler(job.id);
    expect(found).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} every 900000 from ${firstAt}`,
      next: firstAt - CRON_LEAD_MS,
    });
    expect(found?.endDate).toBe(Date.parse("2099-01-01T00:00:00Z"));
    expect((await pendingFirings(job.id)).map((firing) => firing.id)).toEqual([
      `repeat:${cronSchedulerId(job.id)}:${firstAt - CRON_LEAD_MS}`,
    ]);

    const back = await edit(org, job.id, { expression: "45 6 * * 1", endAt: null });
    found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 45 6 * * 1` });
    expect(found?.endDate).toBeUndefined();
    expect(iso((found?.next as number) + CRON_LEAD_MS)).toBe(back.nextExecutionDate);
    expect((await pendingFirings(job.id)).map((firing) => firing.id)).toEqual([
      `repeat:${cronSchedulerId(job.id)}:${found?.next}`,
    ]);
  });

  it("is removed when the job is disabled and put back, set from now, when enabled", async () => {
    const org = await createTestOrganization(context);
    const job = await create(org, { every: "PT1H" });
    await edit(org, job.id, { status: "Disabled" });
    expect(await scheduler(job.id)).toBeUndefined();
    // An edit of a Disabled job's timing does not schedule it.
    await edit(org, job.id, { every: "PT2H" });
    expect(await scheduler(job.id)).toBeUndefined();
    const enabled = await edit(org, job.id, { status: "Active" });
    const firstAt = Date.parse(enabled.updatedAt as string) + 2 * HOUR;
    expect(await scheduler(job.id)).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} every 7200000 from ${firstAt}`,
      next: firstAt - CRON_LEAD_MS,
    });
    expect(enabled.nextExecutionDate).toBe(iso(firstAt));
  });
});

describe("GET /api/cron-jobs/preview with the timing fields", () => {
  const NOW = new Date("2027-03-24T12:00:00.000Z");
  let previewApp: ReturnType<typeof createApp>;
  let org: TestOrganization;
  beforeAll(async () => {
    previewApp = createApp(createTestApiDeps(context, fixedClock(NOW)).deps);
    org = await createTestOrganization(context);
  });
  const preview = (query: Record<string, string>) =>
    request(previewApp).get("/api/cron-jobs/preview").query(query).set("x-api-key", org.apiKey);
  const run = (at: string, n: number, jitterMs = 0) => ({
    at,
    run: n,
    sendFrom: at,
    sendUntil: iso(Date.parse(at) + jitterMs),
  });

  it("answers an interval from one interval after now, as a job created now", async () => {
    const response = await preview({ every: "PT20M", count: "3" });
    const times = ["2027-03-24T12:20:00.000Z", "2027-03-24T12:40:00.000Z", "2027-03-24T13:00:00.000Z"];
    expect({ status: response.status, body: response.body }).toEqual({
      status: 200,
      body: {
        expression: null,
        every: "PT20M",
        timezone: "UTC",
        times,
        neverFires: false,
        firings: times.map((at, index) => run(at, index + 1)),
      },
    });
  });

  it("answers an interval from startAt, a past one keeping its phase", async () => {
    expect((await preview({ every: "PT1H", startAt: "2027-03-25T00:30:00+01:00", count: "2" })).body.times).toEqual([
      "2027-03-24T23:30:00.000Z",
      "2027-03-25T00:30:00.000Z",
    ]);
    expect((await preview({ every: "PT1H", startAt: "2027-03-01T00:45:00Z", count: "2" })).body.times).toEqual([
      "2027-03-24T12:45:00.000Z",
      "2027-03-24T13:45:00.000Z",
    ]);
  });

  it("applies the window and six fields", async () => {
    const windowed = await preview({
      expression: "0 */6 * * *",
      startAt: "2027-03-25T00:00:00Z",
      endAt: "2027-03-25T12:00:00Z",
      count: "10",
    });
    expect(windowed.body.times).toEqual([
      "2027-03-25T00:00:00.000Z",
      "2027-03-25T06:00:00.000Z",
      "2027-03-25T12:00:00.000Z",
    ]);
    expect(windowed.body.neverFires).toBe(false);
    const seconds = await preview({ expression: "*/15 * * * * *", count: "3" });
    expect(seconds.body).toMatchObject({
      expression: "*/15 * * * * *",
      times: ["2027-03-24T12:00:15.000Z", "2027-03-24T12:00:30.000Z", "2027-03-24T12:00:45.000Z"],
    });
  });

  it("marks the firings after the maxRuns-th as no run, and gives each run its send window", async () => {
    const response = await preview({ every: "PT1H", startAt: "2027-03-24T13:00:00Z", maxRuns: "2", jitterMs: "90000" });
    expect(response.body).toEqual({
      expression: null,
      every: "PT1H",
      timezone: "UTC",
      times: ["2027-03-24T13:00:00.000Z", "2027-03-24T14:00:00.000Z"],
      neverFires: false,
      firings: [
        run("2027-03-24T13:00:00.000Z", 1, 90_000),
        run("2027-03-24T14:00:00.000Z", 2, 90_000),
        ...["2027-03-24T15:00:00.000Z", "2027-03-24T16:00:00.000Z", "2027-03-24T17:00:00.000Z"].map((at) => ({
          at,
          run: null,
          sendFrom: null,
          sendUntil: null,
        })),
      ],
    });
  });

  it("says neverFires for a window that is over or holds no firing, as create refuses it", async () => {
    const queries: Record<string, string>[] = [
      { expression: "0 * * * *", endAt: "2027-03-24T11:00:00Z" },
      { every: "PT1H", endAt: "2027-03-24T12:30:00Z" },
      { expression: "0 0 1 1 *", startAt: "2027-04-01T00:00:00Z", endAt: "2027-05-01T00:00:00Z" },
    ];
    for (const query of queries) {
      const response = await preview(query);
      expect({ query, status: response.status, body: response.body }).toMatchObject({
        query,
        status: 200,
        body: { times: [], neverFires: true, firings: [] },
      });
    }
  });

  it("refuses with create's words", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ expression: "0 * * * *", every: "PT1H" }, EITHER],
      [{ every: "P1M" }, EVERY_INVALID],
      [{ every: "PT0.1S" }, EVERY_TOO_SHORT],
      [{ every: "PT1H", startAt: "soon" }, timeInvalid("startAt")],
      [{ every: "PT1H", endAt: "2027-04-01T00:00:00" }, zoneRequired("endAt")],
      [{ every: "PT1H", startAt: "2027-04-02T00:00:00Z", endAt: "2027-04-01T00:00:00Z" }, END_NOT_AFTER_START],
      [{ every: "PT1H", maxRuns: "0" }, MAX_RUNS],
      [{ every: "PT1H", maxRuns: "two" }, MAX_RUNS],
      [{ every: "PT1H", jitterMs: "3600001" }, JITTER],
      [{ every: "PT1H", catchUp: "some" }, CATCH_UP],
      [{ every: "PT1H", catchUpWindowMs: "10" }, CATCH_UP_WINDOW],
      [{ every: "PT1H", overlap: "queue" }, OVERLAP],
    ];
    for (const [query, message] of cases) await expectError(preview(query), 400, message, query);
    // The policies that change no firing time are taken.
    const taken = await preview({ every: "PT1H", catchUp: "all", catchUpWindowMs: "60000", overlap: "buffer" });
    expect(taken.status).toBe(200);
  });
});
