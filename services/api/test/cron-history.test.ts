import { fixedClock } from "@punctual/core";
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

// A cron job's `history` (contract §4): its runs of the last 30 days, newest first, each with every
// field of the history element. Runs are seeded in Postgres as the worker leaves them, on a fixed
// clock, so the 30-day edge is exact.

const NOW = new Date("2030-01-10T12:00:00.000Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const clock = fixedClock(NOW);
const ago = (ms: number) => new Date(NOW.getTime() - ms);

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  app = createApp(createTestApiDeps(context, clock).deps);
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

const get = (id: string) => request(app).get(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey);

async function createJob(expression = "*/15 * * * *") {
  const response = await request(app)
    .post("/api/cronjobs")
    .set("x-api-key", org.apiKey)
    .send({ payload: '{"n":1}', destination: "https://example.com/cron", expression });
  expect(response.status).toBe(200);
  return response.body as { id: string };
}

interface SeededRun {
  id: string;
  cron?: string;
  scheduledFor: Date;
  status: "Queued" | "Sent" | "Failed To Send";
  attempts: number;
  responseStatus?: number | null;
  responseData?: string | null;
  requestData?: string;
  error?: string | null;
  durationMs?: number | null;
  /** When the run was created (the firing); `updatedAt` is a few seconds later. */
  createdAt: Date;
}

async function seedRun(cronJobId: string, run: SeededRun) {
  await context.db.cronRun.create({
    data: {
      id: run.id,
      cronJobId,
      orgId: org.orgId,
      cron: run.cron ?? "*/15 * * * *",
      scheduledFor: run.scheduledFor,
      status: run.status,
      attempts: run.attempts,
      responseStatus: run.responseStatus ?? null,
      responseData: run.responseData ?? null,
      requestData: run.requestData ?? '{"n":1}',
      error: run.error ?? null,
      durationMs: run.durationMs ?? null,
      createdAt: run.createdAt,
      updatedAt: new Date(run.createdAt.getTime() + 3_000),
    },
  });
}

describe("GET /api/cronjobs/:cronJobId history", () => {
  let cronJobId: string;

  beforeAll(async () => {
    cronJobId = (await createJob()).id;
    const runs: SeededRun[] = [
      {
        id: "run_sent",
        scheduledFor: ago(DAY_MS),
        createdAt: ago(DAY_MS),
        status: "Sent",
        attempts: 1,
        responseStatus: 200,
        responseData: '{"ok":true}',
        durationMs: 42,
      },
      {
        id: "run_failed",
        cron: "0 * * * *", // the expression was changed since: each run keeps its own
        scheduledFor: ago(2 * DAY_MS),
        createdAt: ago(2 * DAY_MS),
        status: "Failed To Send",
        attempts: 4,
        responseStatus: null,
        error: "connect ECONNREFUSED 10.0.0.1:443",
        durationMs: 3,
        requestData: '{"n":0}',
      },
      {
        id: "run_edge",
        scheduledFor: ago(30 * DAY_MS),
        createdAt: ago(30 * DAY_MS),
        status: "Sent",
        attempts: 2,
        responseStatus: 204,
        responseData: "",
        durationMs: 120,
      },
      {
        id: "run_too_old",
        scheduledFor: ago(30 * DAY_MS + 1),
        createdAt: ago(30 * DAY_MS + 1),
        status: "Sent",
        attempts: 1,
        responseStatus: 200,
      },
      { id: "run_ancient", scheduledFor: ago(90 * DAY_MS), createdAt: ago(90 * DAY_MS), status: "Sent", attempts: 1 },
    ];
    for (const run of runs) await seedRun(cronJobId, run);
  });

  it("lists the runs of the last 30 days, newest first, with every field", async () => {
    const response = await get(cronJobId);
    expect(response.status).toBe(200);
    expect(response.body.history).toEqual([
      {
        id: "run_sent",
        cron: "*/15 * * * *",
        scheduledFor: "2030-01-09T12:00:00.000Z",
        status: "Sent",
        attempts: 1,
        responseStatus: 200,
        responseData: '{"ok":true}',
        requestData: '{"n":1}',
        error: null,
        durationMs: 42,
        createdAt: "2030-01-09T12:00:00.000Z",
        updatedAt: "2030-01-09T12:00:03.000Z",
      },
      {
        id: "run_failed",
        cron: "0 * * * *",
        scheduledFor: "2030-01-08T12:00:00.000Z",
        status: "Failed To Send",
        attempts: 4,
        responseStatus: null,
        responseData: null,
        requestData: '{"n":0}',
        error: "connect ECONNREFUSED 10.0.0.1:443",
        durationMs: 3,
        createdAt: "2030-01-08T12:00:00.000Z",
        updatedAt: "2030-01-08T12:00:03.000Z",
      },
      {
        id: "run_edge",
        cron: "*/15 * * * *",
        scheduledFor: "2029-12-11T12:00:00.000Z",
        status: "Sent",
        attempts: 2,
        responseStatus: 204,
        responseData: "",
        requestData: '{"n":1}',
        error: null,
        durationMs: 120,
        createdAt: "2029-12-11T12:00:00.000Z",
        updatedAt: "2029-12-11T12:00:03.000Z",
      },
    ]);
  });

  it("answers an edit with the same history", async () => {
    const edited = await request(app)
      .put(`/api/cronjobs/${cronJobId}`)
      .set("x-api-key", org.apiKey)
      .send({ payload: '{"n":2}' });
    expect(edited.status).toBe(200);
    expect(edited.body.payload).toBe('{"n":2}');
    expect(edited.body.history.map((run: { id: string }) => run.id)).toEqual(["run_sent", "run_failed", "run_edge"]);
    expect(edited.body.updatedAt).toBe(NOW.toISOString());
  });

  it("leaves history out of the list", async () => {
    const listed = await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey);
    expect(listed.body.find((record: { id: string }) => record.id === cronJobId)).not.toHaveProperty("history");
  });
});

describe("a run being delivered", () => {
  it("shows as nextExecutionStatus Queued until it finishes", async () => {
    const { id } = await createJob("0 12 * * *");
    expect((await get(id)).body.nextExecutionStatus).toBe("Pending");
    await seedRun(id, { id: "run_queued", scheduledFor: ago(0), createdAt: ago(0), status: "Queued", attempts: 0 });

    const during = await get(id);
    expect(during.body).toMatchObject({ nextExecutionStatus: "Queued", nextExecutionDate: "2030-01-11T12:00:00.000Z" });
    expect(during.body.history).toEqual([
      expect.objectContaining({
        id: "run_queued",
        status: "Queued",
        attempts: 0,
        responseStatus: null,
        responseData: null,
        error: null,
        durationMs: null,
      }),
    ]);
    const listed = await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey);
    expect(listed.body.find((record: { id: string }) => record.id === id)).toMatchObject({
      nextExecutionStatus: "Queued",
    });

    await context.db.cronRun.update({ where: { id: "run_queued" }, data: { status: "Sent", attempts: 1 } });
    expect((await get(id)).body.nextExecutionStatus).toBe("Pending");
  });
});

describe("deleting a cron job", () => {
  it("takes its history with it", async () => {
    const { id } = await createJob();
    await seedRun(id, {
      id: "run_gone",
      scheduledFor: ago(DAY_MS),
      createdAt: ago(DAY_MS),
      status: "Sent",
      attempts: 1,
    });
    const deleted = await request(app).delete(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey);
    expect(deleted.status).toBe(204);
    expect(await context.db.cronRun.count({ where: { cronJobId: id } })).toBe(0);
    expect((await get(id)).status).toBe(404);
  });
});
