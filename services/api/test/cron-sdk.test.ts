import { createCronJob, editCronJob, getCronJob, getManyCronJobs, init } from "@jiter/node";
import { nextCronRun } from "@punctual/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { defaultEffectivePolicy } from "../../../test/support/delivery-policy.ts";
import { startLiveApi } from "../../../test/support/live-api.ts";
import type { CronJob, CronJobWithHistory } from "../src/cron-jobs/schemas.ts";

// The real `@jiter/node` 0.4.0 cron job calls, unchanged, against a listening Punctual API. The
// SDK keeps one global configuration (and one axios instance) per process: one organization here.
// What it sends: POST /cronjobs {payload, destination, expression}; GET /cronjobs;
// GET /cronjobs/:id; PUT /cronjobs/:id with the options other than `id` (payload, destination,
// expression, status).

let context: TestContext;
let org: TestOrganization;
let baseUrl: string;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
  baseUrl = `${(await startLiveApi(context)).baseUrl}/api`;
  // The SDK appends '/cronjobs' to its base, whose default is 'https://app.jiter.dev/api'.
  init({ apiKey: org.apiKey, signingSecret: org.signingSecret, baseUrl });
});
afterAll(() => context?.close());

// The SDK types `status` as its enum `CronJobStatus` but 0.4.0 exports that enum neither at run time
// nor in its typings: a TypeScript caller passes the string with a cast, as here.
type CronJobStatus = NonNullable<Parameters<typeof editCronJob>[0]["status"]>;
const status = (value: "Active" | "Disabled" | "Paused") => value as CronJobStatus;

// Its typings also declare `getCronJob` without `history` and `getManyCronJobs` as one record, not
// an array; what arrives over the wire is what the contract says, so the answers are read as that.
const getJob = async (id: string) => (await getCronJob({ id })) as CronJobWithHistory;
const listJobs = async () => (await getManyCronJobs()) as unknown as CronJob[];

const destination = "https://example.com/webhooks/jiter";
/** The timing fields of a job created with an expression alone (contract §10.4). */
const SCHEDULE_DEFAULTS = {
  every: null,
  startAt: null,
  endAt: null,
  maxRuns: null,
  catchUp: "skip",
  catchUpWindowMs: 3_600_000,
  overlap: "allow",
  jitterMs: 0,
};
const expression = "0 6 * * 1";

/** The cron job most tests start from, created through the SDK. */
const createReportJob = () => createCronJob({ payload: JSON.stringify({ action: "report" }), destination, expression });

// The SDK is bound to one organization, whose limit is 3 cron jobs: every test starts from none, so
// that each one passes alone and in any order.
beforeEach(async () => {
  for (const job of await listJobs()) {
    const response = await fetch(`${baseUrl}/cronjobs/${job.id}`, {
      method: "DELETE",
      headers: { "x-api-key": org.apiKey },
    });
    expect(response.status).toBe(204);
  }
});

describe("@jiter/node 0.4.0 cron jobs against Punctual", () => {
  it("creates a cron job", async () => {
    const expectedNext = nextCronRun(expression, "UTC", new Date())?.toISOString();
    const job = await createReportJob();
    expect(job).toEqual({
      id: expect.stringMatching(/^cron_[0-9a-z]{26}$/),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      status: "Active",
      nextExecutionStatus: "Pending",
      expression,
      nextExecutionDate: expectedNext,
      destination,
      org: org.orgId,
      payload: '{"action":"report"}',
      timezone: "UTC",
      // New fields beside the SDK's: the schedule's defaults (contract §10.4), no flow (§10.2), the
      // effective delivery policy (§10.1).
      ...SCHEDULE_DEFAULTS,
      flowKey: null,
      callbackUrl: null,
      labels: {},
      ...defaultEffectivePolicy(context.config),
      history: [],
    });
    expect(job.updatedAt).toBe(job.createdAt);
    expect(new Date(job.createdAt).toISOString()).toBe(job.createdAt);
  });

  it("gets it with its (empty) history", async () => {
    const { id } = await createReportJob();
    const job = await getJob(id);
    expect(job).toMatchObject({ id, status: "Active", expression, destination, payload: '{"action":"report"}' });
    expect(job.history).toEqual([]);
    expect(job.nextExecutionDate).toBe(nextCronRun(expression, "UTC", new Date())?.toISOString());
  });

  it("lists every cron job of the organization, oldest first, without history", async () => {
    const { id, createdAt } = await createReportJob();
    const second = await createCronJob({ payload: "{}", destination, expression: "*/10 * * * *" });
    const jobs = await listJobs();
    expect(jobs.map((job) => job.id)).toEqual([id, second.id]);
    expect(jobs[0]).toEqual({
      id,
      createdAt,
      updatedAt: createdAt,
      status: "Active",
      nextExecutionStatus: "Pending",
      expression,
      nextExecutionDate: expect.any(String),
      destination,
      org: org.orgId,
      payload: '{"action":"report"}',
      timezone: "UTC",
      ...SCHEDULE_DEFAULTS,
      flowKey: null,
      callbackUrl: null,
      labels: {},
      ...defaultEffectivePolicy(context.config),
    });
  });

  it("edits the payload", async () => {
    const { id, createdAt } = await createReportJob();
    const job = await editCronJob({ id, payload: '{"action":"changed"}' });
    expect(job).toMatchObject({ id, status: "Active", payload: '{"action":"changed"}', expression, history: [] });
    expect(job.updatedAt >= createdAt).toBe(true);
    expect((await getJob(id)).payload).toBe('{"action":"changed"}');
  });

  it("disables it: no next execution, its status and date say so", async () => {
    const { id } = await createReportJob();
    const job = await editCronJob({ id, status: status("Disabled") });
    expect(job).toMatchObject({
      id,
      status: "Disabled",
      nextExecutionStatus: "Disabled",
      history: [],
    });
    expect(job).not.toHaveProperty("nextExecutionDate");
    expect((await listJobs()).find((listed) => listed.id === id)?.status).toBe("Disabled");
  });

  it("enables it again with a next execution date", async () => {
    const { id } = await createReportJob();
    expect(await editCronJob({ id, status: status("Disabled") })).not.toHaveProperty("nextExecutionDate");
    const job = await editCronJob({ id, status: status("Active") });
    expect(job).toMatchObject({
      id,
      status: "Active",
      nextExecutionStatus: "Pending",
      nextExecutionDate: expect.any(String),
    });
    expect(job.nextExecutionDate).toBe(nextCronRun(expression, "UTC", new Date())?.toISOString());
  });

  it("edits the expression and the destination", async () => {
    const { id } = await createReportJob();
    const job = await editCronJob({ id, expression: "30 7 * * *", destination: "https://example.com/other" });
    expect(job).toMatchObject({ id, expression: "30 7 * * *", destination: "https://example.com/other" });
    expect(job.nextExecutionDate).toBe(nextCronRun("30 7 * * *", "UTC", new Date())?.toISOString());
  });

  it("surfaces errors as the SDK's rejected requests carrying {message}", async () => {
    await expect(getCronJob({ id: "cron_missing" })).rejects.toMatchObject({
      response: { status: 404, data: { message: "Unable to find cron job" } },
    });
    await expect(createCronJob({ payload: "{}", destination, expression: "@hourly" })).rejects.toMatchObject({
      response: { status: 400, data: { message: "Please enter a valid cron expression" } },
    });
    // Two jobs exist: a third fits, the fourth does not.
    const { id } = await createReportJob();
    await createCronJob({ payload: "{}", destination, expression: "*/10 * * * *" });
    await createCronJob({ payload: "{}", destination, expression });
    await expect(createCronJob({ payload: "{}", destination, expression })).rejects.toMatchObject({
      response: { status: 403, data: { message: "Cron job limit of 3 reached for this organization" } },
    });
    await expect(editCronJob({ id, status: status("Paused") })).rejects.toMatchObject({
      response: { status: 400, data: { message: "'status' must be one of 'Active' or 'Disabled'" } },
    });
  });
});
