import { CRON_LEAD_MS, type CronJobData, cronSchedulerId } from "@punctual/core";
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

// The per-organization limit of cron jobs (contract §4, §7), tenant isolation (contract §1) and
// the two spellings of the collection path.

const LIMIT_MESSAGE = "Cron job limit of 3 reached for this organization";
const NOT_FOUND = { message: "Unable to find cron job" };
const job = (n: number) => ({
  payload: `{"n":${n}}`,
  destination: "https://example.com/cron",
  expression: "0 0 1 1 *",
});

let context: TestContext;
let app: ReturnType<typeof createApp>;
let cronQueue: Queue<CronJobData>;

beforeAll(async () => {
  context = await createTestContext();
  const api = createTestApiDeps(context);
  app = createApp(api.deps);
  cronQueue = api.cronQueue;
});
afterAll(() => context.close());

const create = (org: TestOrganization, body: object, path = "/api/cronjobs") =>
  request(app).post(path).set("x-api-key", org.apiKey).send(body);
const list = (org: TestOrganization, path = "/api/cronjobs") => request(app).get(path).set("x-api-key", org.apiKey);
const ids = (response: request.Response) => (response.body as { id: string }[]).map((record) => record.id);

describe("the limit of 3 cron jobs per organization", () => {
  it("refuses the fourth job with 403, and a delete frees a slot", async () => {
    expect(context.config.MAX_CRON_JOBS_PER_ORG).toBe(3);
    const org = await createTestOrganization(context);
    const created: string[] = [];
    for (const n of [1, 2, 3]) {
      const response = await create(org, job(n));
      expect(response.status).toBe(200);
      created.push(response.body.id);
    }
    const fourth = await create(org, job(4));
    expect({ status: fourth.status, body: fourth.body }).toEqual({ status: 403, body: { message: LIMIT_MESSAGE } });
    expect(ids(await list(org))).toEqual(created);

    // A Disabled job still counts.
    await request(app).put(`/api/cronjobs/${created[0]}`).set("x-api-key", org.apiKey).send({ status: "Disabled" });
    expect((await create(org, job(4))).status).toBe(403);

    const deleted = await request(app).delete(`/api/cronjobs/${created[1]}`).set("x-api-key", org.apiKey);
    expect(deleted.status).toBe(204);
    const replacement = await create(org, job(5));
    expect(replacement.status).toBe(200);
    expect(ids(await list(org))).toEqual([created[0], created[2], replacement.body.id]);
    expect((await create(org, job(6))).status).toBe(403);
  });

  it("lets exactly two of four concurrent creates through when two slots are left", async () => {
    const schedulerIds = async () =>
      new Set((await cronQueue.getJobSchedulers(0, -1)).map((scheduler) => scheduler.id ?? scheduler.key));
    const before = await schedulerIds();
    const org = await createTestOrganization(context);
    const first = await create(org, job(1));
    expect(first.status).toBe(200);
    const responses = await Promise.all([2, 3, 4, 5].map((n) => create(org, job(n))));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, 200, 403, 403]);
    for (const refused of responses.filter((response) => response.status === 403)) {
      expect(refused.body).toEqual({ message: LIMIT_MESSAGE });
    }
    // Each accepted job got its row and its scheduler; a refused one left neither behind: the
    // organization's rows are exactly the accepted jobs, and so are the schedulers this test added.
    const accepted = [first, ...responses.filter((response) => response.status === 200)].map(
      (response) => response.body.id as string,
    );
    const rows = await context.db.cronJob.findMany({ where: { orgId: org.orgId }, select: { id: true } });
    expect(rows.map((row) => row.id).sort()).toEqual([...accepted].sort());
    const added = [...(await schedulerIds())].filter((id) => !before.has(id));
    expect(added.sort()).toEqual(accepted.map(cronSchedulerId).sort());
    for (const id of accepted) {
      expect(await cronQueue.getJobScheduler(cronSchedulerId(id))).toMatchObject({
        pattern: `lead ${CRON_LEAD_MS} 0 0 1 1 *`,
      });
    }
  });

  it("counts per organization", async () => {
    const full = await createTestOrganization(context);
    for (const n of [1, 2, 3]) expect((await create(full, job(n))).status).toBe(200);
    const other = await createTestOrganization(context);
    expect((await create(other, job(1))).status).toBe(200);
  });

  it("uses the configured limit in its message", async () => {
    const { deps } = createTestApiDeps(context);
    const one = createApp({ ...deps, config: { ...deps.config, MAX_CRON_JOBS_PER_ORG: 1 } });
    const org = await createTestOrganization(context);
    const post = () => request(one).post("/api/cronjobs").set("x-api-key", org.apiKey).send(job(1));
    expect((await post()).status).toBe(200);
    const refused = await post();
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 403,
      body: { message: "Cron job limit of 1 reached for this organization" },
    });
  });
});

describe("another organization", () => {
  let owner: TestOrganization;
  let stranger: TestOrganization;
  let cronJobId: string;
  let original: Record<string, unknown>;

  beforeAll(async () => {
    owner = await createTestOrganization(context, "Owner");
    stranger = await createTestOrganization(context, "Stranger");
    const response = await create(owner, job(1));
    cronJobId = response.body.id;
    original = (await request(app).get(`/api/cronjobs/${cronJobId}`).set("x-api-key", owner.apiKey)).body;
  });

  it("cannot see it: get answers 404 as for a missing job, and the list leaves it out", async () => {
    const got = await request(app).get(`/api/cronjobs/${cronJobId}`).set("x-api-key", stranger.apiKey);
    expect({ status: got.status, body: got.body }).toEqual({ status: 404, body: NOT_FOUND });
    const listed = await list(stranger);
    expect({ status: listed.status, body: listed.body }).toEqual({ status: 200, body: [] });
  });

  it("cannot change or delete it", async () => {
    for (const changes of [{ status: "Disabled" }, { payload: "stolen" }, { expression: "* * * * *" }]) {
      const edited = await request(app)
        .put(`/api/cronjobs/${cronJobId}`)
        .set("x-api-key", stranger.apiKey)
        .send(changes);
      expect({ status: edited.status, body: edited.body }).toEqual({ status: 404, body: NOT_FOUND });
    }
    const deleted = await request(app).delete(`/api/cronjobs/${cronJobId}`).set("x-api-key", stranger.apiKey);
    expect({ status: deleted.status, body: deleted.body }).toEqual({ status: 404, body: NOT_FOUND });

    const after = await request(app).get(`/api/cronjobs/${cronJobId}`).set("x-api-key", owner.apiKey);
    expect(after.body).toEqual(original);
    expect(await cronQueue.getJobScheduler(cronSchedulerId(cronJobId))).toMatchObject({
      pattern: `lead ${CRON_LEAD_MS} 0 0 1 1 *`,
    });
  });
});

describe("the collection path", () => {
  it("answers as /api/cronjobs and as /api/cronJobs", async () => {
    const org = await createTestOrganization(context);
    const first = await create(org, job(1), "/api/cronJobs");
    const second = await create(org, job(2), "/api/cronjobs");
    expect([first.status, second.status]).toEqual([200, 200]);

    const lower = await list(org, "/api/cronjobs");
    const camel = await list(org, "/api/cronJobs");
    expect(lower.status).toBe(200);
    expect(camel.status).toBe(200);
    expect(ids(lower)).toEqual([first.body.id, second.body.id]);
    expect(camel.body).toEqual(lower.body);

    const one = await request(app).get(`/api/cronJobs/${first.body.id}`).set("x-api-key", org.apiKey);
    expect(one.body).toMatchObject({ id: first.body.id, history: [] });
    const edited = await request(app)
      .put(`/api/cronJobs/${second.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ status: "Disabled" });
    expect(edited.body).toMatchObject({ id: second.body.id, status: "Disabled" });
  });

  it("lists oldest first without history", async () => {
    const org = await createTestOrganization(context);
    const created = [];
    for (const n of [1, 2, 3]) created.push((await create(org, job(n))).body.id);
    const listed = await list(org);
    expect(ids(listed)).toEqual(created);
    for (const record of listed.body) expect(record).not.toHaveProperty("history");
    expect(Object.keys(listed.body[0]).sort()).toEqual(
      [
        "createdAt",
        "destination",
        "expression",
        "id",
        "nextExecutionDate",
        "nextExecutionStatus",
        "org",
        "payload",
        "status",
        "timezone",
        "updatedAt",
        // The schedule (contract §10.4), the flow (§10.2), the labels and the outcome callback (§10.5).
        "every",
        "startAt",
        "endAt",
        "maxRuns",
        "catchUp",
        "catchUpWindowMs",
        "overlap",
        "jitterMs",
        "flowKey",
        "labels",
        "callbackUrl",
        // The effective delivery policy (contract §10.1).
        "method",
        "headers",
        "body",
        "timeoutMs",
        "retry",
      ].sort(),
    );
  });
});
