import { CRON_LEAD_MS, type CronJobData, cronSchedulerId, nextCronRun } from "@punctual/core";
import { getNextMillis, type Queue } from "bullmq";
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

// What the cron jobs API does to BullMQ's job schedulers (contract §4): the record's
// nextExecutionDate is the scheduler's own next run; Disabled removes the scheduler at once, Active
// puts it back from the next matching time; a new expression or timezone replaces it.

let context: TestContext;
let app: ReturnType<typeof createApp>;
let cronQueue: Queue<CronJobData>;
let org: TestOrganization;

beforeAll(async () => {
  // Enough room for every job of this file in one organization.
  context = await createTestContext({ MAX_CRON_JOBS_PER_ORG: "20" });
  const api = createTestApiDeps(context);
  app = createApp(api.deps);
  cronQueue = api.cronQueue;
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

const body = { payload: '{"report":"daily"}', destination: "https://example.com/cron" };

async function create(fields: Record<string, unknown>) {
  const response = await request(app)
    .post("/api/cronjobs")
    .set("x-api-key", org.apiKey)
    .send({ ...body, ...fields });
  expect(response.status).toBe(200);
  return response.body as { id: string; nextExecutionDate?: string; expression: string; timezone: string };
}

async function edit(id: string, changes: Record<string, unknown>) {
  const response = await request(app).put(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey).send(changes);
  expect(response.status).toBe(200);
  return response.body as { id: string; status: string; nextExecutionDate?: string };
}

const scheduler = (id: string) => cronQueue.getJobScheduler(cronSchedulerId(id));

/** The delayed firings waiting for this job's scheduler (BullMQ keeps exactly the next one). */
async function pendingFirings(id: string) {
  const delayed = await cronQueue.getDelayed();
  return delayed.filter((job) => job.id?.startsWith(`repeat:${cronSchedulerId(id)}:`));
}

const iso = (millis: number | undefined) => (millis === undefined ? undefined : new Date(millis).toISOString());
/** The firing of a scheduler's next job: the job is due a lead before it (schedule.ts). */
const firingOf = (scheduler: { next?: number } | undefined) =>
  scheduler?.next === undefined ? undefined : scheduler.next + CRON_LEAD_MS;

describe("creating a cron job", () => {
  it("puts a scheduler whose next run is the record's nextExecutionDate", async () => {
    const job = await create({ expression: "15 3 * * *" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} 15 3 * * *`,
      tz: "UTC",
      template: { data: { cronJobId: job.id } },
    });
    expect(iso(firingOf(found))).toBe(job.nextExecutionDate);
    expect(await pendingFirings(job.id)).toHaveLength(1);
  });

  it("agrees with BullMQ in a zone with daylight saving time", async () => {
    const job = await create({ expression: "30 2 * * *", timezone: "America/New_York" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 30 2 * * *`, tz: "America/New_York" });
    expect(iso(firingOf(found))).toBe(job.nextExecutionDate);
  });

  it("stores the expression with single spaces and hands BullMQ that form", async () => {
    const job = await create({ expression: "  0   9 * *  MON-FRI " });
    expect(job.expression).toBe("0 9 * * MON-FRI");
    const found = await scheduler(job.id);
    expect(found?.pattern).toBe(`lead ${CRON_LEAD_MS} 0 9 * * MON-FRI`);
    expect(iso(firingOf(found))).toBe(job.nextExecutionDate);
  });
});

describe("nextExecutionDate across daylight saving changes (no waiting)", () => {
  // America/New_York: clocks go 02:00 EST → 03:00 EDT on 2026-03-08 and 02:00 EDT → 01:00 EST on
  // 2026-11-01. 02:30 does not exist on the first day and exists once on the second.
  const cases: [after: string, expression: string, next: string][] = [
    ["2026-03-07T12:00:00.000Z", "30 2 * * *", "2026-03-08T07:30:00.000Z"], // the skipped hour: 03:30 EDT
    ["2026-03-08T07:31:00.000Z", "30 2 * * *", "2026-03-09T06:30:00.000Z"], // 02:30 EDT
    ["2026-03-01T12:00:00.000Z", "30 2 * * *", "2026-03-02T07:30:00.000Z"], // 02:30 EST
    ["2026-10-31T12:00:00.000Z", "30 2 * * *", "2026-11-01T07:30:00.000Z"], // 02:30 EST, once
    ["2026-11-01T07:31:00.000Z", "30 2 * * *", "2026-11-02T07:30:00.000Z"],
    ["2026-10-31T12:00:00.000Z", "30 1 * * *", "2026-11-01T05:30:00.000Z"], // first 01:30 (EDT)
    ["2026-11-01T05:31:00.000Z", "30 1 * * *", "2026-11-02T06:30:00.000Z"], // the repeated 01:30 is not run again
  ];

  it.each(cases)("after %s, '%s' runs next at %s, as BullMQ computes it", (after, expression, next) => {
    const millis = new Date(after).getTime();
    const ours = nextCronRun(expression, "America/New_York", new Date(after));
    expect(ours?.toISOString()).toBe(next);
    expect(iso(getNextMillis(millis, { pattern: expression, tz: "America/New_York" }))).toBe(next);
  });

  it("after the change but before the skipped 02:30's moment (03:30 EDT), runs it still, where BullMQ's cron-parser skips a day", () => {
    const after = new Date("2026-03-08T07:29:00.000Z");
    expect(nextCronRun("30 2 * * *", "America/New_York", after)?.toISOString()).toBe("2026-03-08T07:30:00.000Z");
    expect(iso(getNextMillis(after.getTime(), { pattern: "30 2 * * *", tz: "America/New_York" }))).toBe(
      "2026-03-09T06:30:00.000Z",
    );
  });
});

describe("editing a cron job", () => {
  it("removes the scheduler at once when disabled, and puts it back from the next matching time", async () => {
    const job = await create({ expression: "0 4 * * *", timezone: "Europe/Paris" });
    expect(await scheduler(job.id)).toBeDefined();

    const disabled = await edit(job.id, { status: "Disabled" });
    expect(disabled).toMatchObject({ status: "Disabled", nextExecutionStatus: "Disabled" });
    expect(disabled).not.toHaveProperty("nextExecutionDate");
    expect(await scheduler(job.id)).toBeUndefined();
    expect(await pendingFirings(job.id)).toHaveLength(0);

    // Disabling again changes nothing and does not fail.
    expect((await edit(job.id, { status: "Disabled" })).status).toBe("Disabled");

    const before = new Date();
    const enabled = await edit(job.id, { status: "Active" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 0 4 * * *`, tz: "Europe/Paris" });
    expect(iso(firingOf(found))).toBe(enabled.nextExecutionDate);
    expect(enabled.nextExecutionDate).toBe(nextCronRun("0 4 * * *", "Europe/Paris", before)?.toISOString());
    expect(await pendingFirings(job.id)).toHaveLength(1);
  });

  it("replaces the scheduler's pattern when the expression changes", async () => {
    const job = await create({ expression: "0 5 * * *" });
    const edited = await edit(job.id, { expression: "45 6 * * 1" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 45 6 * * 1`, tz: "UTC" });
    expect(iso(firingOf(found))).toBe(edited.nextExecutionDate);
    // The firing of the old pattern is gone; only the new one waits.
    const firings = await pendingFirings(job.id);
    expect(firings.map((firing) => firing.id)).toEqual([`repeat:${cronSchedulerId(job.id)}:${found?.next}`]);
  });

  it("replaces the scheduler's zone when the timezone changes", async () => {
    const job = await create({ expression: "0 7 * * *" });
    const edited = await edit(job.id, { timezone: "Asia/Tokyo" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 0 7 * * *`, tz: "Asia/Tokyo" });
    expect(iso(firingOf(found))).toBe(edited.nextExecutionDate);
    expect(await pendingFirings(job.id)).toHaveLength(1);
  });

  it("replaces the zone even when the next run stays the same", async () => {
    const job = await create({ expression: "0 14 * * *" });
    const edited = await edit(job.id, { timezone: "Etc/UTC" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 0 14 * * *`, tz: "Etc/UTC" });
    expect(iso(firingOf(found))).toBe(edited.nextExecutionDate);
    expect(edited.nextExecutionDate).toBe(job.nextExecutionDate);
    expect(await pendingFirings(job.id)).toHaveLength(1);
  });

  it("leaves the scheduler alone when only the payload or destination changes", async () => {
    const job = await create({ expression: "0 8 * * *" });
    const before = await scheduler(job.id);
    await edit(job.id, { payload: '{"report":"weekly"}', destination: "https://example.com/other" });
    expect(await scheduler(job.id)).toEqual(before);
    // The firing carries only the id: the worker reads payload and destination when it runs.
    expect(before?.template?.data).toEqual({ cronJobId: job.id });
  });

  it("shows a Disabled job with no next execution in get and list: status Disabled, no date", async () => {
    const job = await create({ expression: "0 11 * * *" });
    await edit(job.id, { status: "Disabled" });
    const got = await request(app).get(`/api/cronjobs/${job.id}`).set("x-api-key", org.apiKey);
    expect(got.body).toMatchObject({ status: "Disabled", nextExecutionStatus: "Disabled" });
    expect(got.body).not.toHaveProperty("nextExecutionDate");
    const listed = await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey);
    const record = listed.body.find((found: { id: string }) => found.id === job.id);
    expect(record).toMatchObject({ nextExecutionStatus: "Disabled" });
    expect(record).not.toHaveProperty("nextExecutionDate");
  });

  it("does not schedule a Disabled job whose expression changes, and uses the new one when enabled", async () => {
    const job = await create({ expression: "0 9 * * *" });
    await edit(job.id, { status: "Disabled" });
    const edited = await edit(job.id, { expression: "0 10 * * *", timezone: "Europe/London" });
    expect(edited).toMatchObject({ nextExecutionStatus: "Disabled" });
    expect(edited).not.toHaveProperty("nextExecutionDate");
    expect(await scheduler(job.id)).toBeUndefined();

    const enabled = await edit(job.id, { status: "Active" });
    const found = await scheduler(job.id);
    expect(found).toMatchObject({ pattern: `lead ${CRON_LEAD_MS} 0 10 * * *`, tz: "Europe/London" });
    expect(iso(firingOf(found))).toBe(enabled.nextExecutionDate);
  });

  it("disables and changes the expression in one edit", async () => {
    const job = await create({ expression: "0 11 * * *" });
    await edit(job.id, { status: "Disabled", expression: "0 12 * * *" });
    expect(await scheduler(job.id)).toBeUndefined();
  });
});

describe("deleting a cron job", () => {
  it("answers 204 with an empty body and removes the scheduler", async () => {
    const job = await create({ expression: "0 13 * * *" });
    const response = await request(app).delete(`/api/cronjobs/${job.id}`).set("x-api-key", org.apiKey);
    expect(response.status).toBe(204);
    expect(response.text).toBe("");
    expect(await scheduler(job.id)).toBeUndefined();
    expect(await pendingFirings(job.id)).toHaveLength(0);

    const again = await request(app).delete(`/api/cronjobs/${job.id}`).set("x-api-key", org.apiKey);
    expect({ status: again.status, body: again.body }).toEqual({
      status: 404,
      body: { message: "Unable to find cron job" },
    });
  });
});
