import { recordFailureNoticeSent } from "@punctual/core";
import { createWorker, type DeliveryWorker } from "@punctual/worker";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

// GET /api/admin/service-health: the queues' depth, the live workers (a real worker announces
// itself and leaves the list when it stops), the reconciler's last run and the failure notices.

const ADMIN_TOKEN = "sec-Hn5cR8vMq2Lx7Tb4Wz6K";

let context: TestContext;
let app: ReturnType<typeof createApp>;
let worker: DeliveryWorker | undefined;

beforeAll(async () => {
  // The reconciler runs often here, so its first run is seen soon.
  context = await createTestContext({ ADMIN_TOKEN, WORKER_HEALTH_PORT: "0", RECONCILE_INTERVAL_MS: "500" });
  app = createApp(createTestApiDeps(context).deps);
});
afterAll(async () => {
  await worker?.stop();
  await context.close();
});

const health = () => request(app).get("/api/admin/service-health").set("authorization", `Bearer ${ADMIN_TOKEN}`);

const counts = { waiting: expect.any(Number), delayed: expect.any(Number), active: expect.any(Number), failed: 0 };

describe("GET /api/admin/service-health", () => {
  it("lists a running worker with its host, pid and times and the reconciler's last run, and drops the worker once it stopped", async () => {
    worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    const startedAround = Date.now();

    const response = await health();
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      queues: { events: counts, cron: counts, maintenance: counts },
      workers: [
        {
          id: expect.stringMatching(/^[0-9a-f]{16}$/),
          host: expect.any(String),
          pid: process.pid,
          startedAt: expect.any(String),
          lastSeenAt: expect.any(String),
        },
      ],
      failureNotices: { lastSentAt: null, sentLast24h: 0, smtpConfigured: false },
      bullBoard: "/admin/queues",
    });
    expect(Math.abs(Date.parse(response.body.workers[0].startedAt) - startedAround)).toBeLessThan(5_000);

    await expect
      .poll(async () => (await health()).body.reconciler?.lastRunAt ?? null, { timeout: 10_000, interval: 250 })
      .not.toBeNull();
    const { reconciler } = (await health()).body;
    expect(reconciler.durationMs).toEqual(expect.any(Number));
    expect(reconciler.durationMs).toBeGreaterThanOrEqual(0);
    expect(Math.abs(Date.parse(reconciler.lastRunAt) - Date.now())).toBeLessThan(10_000);

    await worker.stop();
    worker = undefined;
    // Removed at once by the graceful stop, not 15 s later when the heartbeat would expire.
    const after = await health();
    expect({ status: after.status, workers: after.body.workers }).toEqual({ status: 200, workers: [] });
  });

  it("counts the delayed job of a scheduled event in the events queue", async () => {
    const org = await createTestOrganization(context);
    const before = (await health()).body.queues.events.delayed as number;
    const created = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send({
        payload: "{}",
        destination: "https://example.com/hook",
        scheduledTime: new Date(Date.now() + 3_600_000),
      });
    expect(created.status).toBe(200);
    await expect.poll(async () => (await health()).body.queues.events.delayed).toBe(before + 1);
  });

  it("says when the last failure notice was sent and how many in the last 24 hours", async () => {
    const now = Date.now();
    await recordFailureNoticeSent(context.redis, context.config.QUEUE_PREFIX, new Date(now - 25 * 3_600_000), "org_a");
    await recordFailureNoticeSent(context.redis, context.config.QUEUE_PREFIX, new Date(now - 3_600_000), "org_b");
    await recordFailureNoticeSent(context.redis, context.config.QUEUE_PREFIX, new Date(now - 60_000), "org_c");
    const { failureNotices } = (await health()).body;
    expect(failureNotices).toEqual({
      lastSentAt: new Date(now - 60_000).toISOString(),
      sentLast24h: 2,
      smtpConfigured: false,
    });
  });

  it("says whether SMTP_URL is set, without which no notice is sent", async () => {
    const { deps } = createTestApiDeps(context);
    const withSmtp = createApp({ ...deps, config: { ...deps.config, SMTP_URL: "smtp://127.0.0.1:2525" } });
    const response = await request(withSmtp)
      .get("/api/admin/service-health")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(response.status).toBe(200);
    expect(response.body.failureNotices.smtpConfigured).toBe(true);
    expect((await health()).body.failureNotices.smtpConfigured).toBe(false);
  });

  it("answers the operator's console session, not an organization's", async () => {
    const operator = await request(app).post("/console/api/operator-session").send({ adminToken: ADMIN_TOKEN });
    const operatorCookie = String(operator.headers["set-cookie"]?.[0]).split(";")[0] ?? "";
    expect((await request(app).get("/api/admin/service-health").set("cookie", operatorCookie)).status).toBe(200);

    const org = await createTestOrganization(context);
    const signedIn = await request(app).post("/console/api/session").send({ apiKey: org.apiKey });
    const orgCookie = String(signedIn.headers["set-cookie"]?.[0]).split(";")[0] ?? "";
    const refused = await request(app).get("/api/admin/service-health").set("cookie", orgCookie);
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 401,
      body: { message: "Missing admin token" },
    });
    expect((await request(app).get("/api/admin/service-health")).status).toBe(401);
  });
});
