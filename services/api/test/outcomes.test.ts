import { systemClock } from "@punctual/core";
import { Webhook } from "standardwebhooks";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { statusOf } from "../../../test/support/events.ts";
import {
  type Delivery,
  type Receiver,
  type ReceiverOptions,
  startTestReceiver,
} from "../../../test/support/receiver.ts";
import { startTestWorker } from "../../../test/support/worker.ts";
import { createApp } from "../src/app.ts";

// Outcome notices end to end: the API writes events, cron jobs and webhooks, a real worker in this
// process delivers the events and the notices (callbacks and operational webhooks) to receivers on
// loopback, and each notice is verified with the standardwebhooks package against the
// organization's secret. Retries of notices are 200 ms apart (RETRY_DELAYS_MS), the breaker opens
// after 5 failures over 1 s, and an organization may schedule 10 events a month.

const MONTHLY_LIMIT = 10;

let context: TestContext;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    RETRY_DELAYS_MS: "200,200",
    BREAKER_FAILURES: "5",
    BREAKER_MIN_SPAN_MS: "1000",
    BREAKER_PROBE_MS: "300",
    MAX_EVENTS_PER_MONTH: String(MONTHLY_LIMIT),
  });
  app = createApp(createTestApiDeps(context, systemClock).deps);
  await startTestWorker(context);
});

afterAll(() => context?.close());

const receiver = (options: ReceiverOptions = {}): Promise<Receiver> => startTestReceiver(context, options);

interface Notice {
  type: string;
  data: Record<string, unknown>;
}

/** The delivery's body, once its signature is verified with the organization's secret. */
function verified(org: TestOrganization, delivery: Delivery): Notice {
  return new Webhook(org.signingSecret).verify(delivery.rawBody, delivery.headers as Record<string, string>) as Notice;
}

const soon = (ms = 1_500) => new Date(Date.now() + ms).toISOString();

async function createEvent(org: TestOrganization, body: Record<string, unknown>): Promise<string> {
  const response = await request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send({ payload: "{}", scheduledTime: soon(), ...body });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.id;
}

async function createWebhook(org: TestOrganization, url: string, types: string[]): Promise<string> {
  const response = await request(app).post("/api/webhooks").set("x-api-key", org.apiKey).send({ url, types });
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.id;
}

const getEvent = async (org: TestOrganization, id: string) =>
  (await request(app).get(`/api/events/${id}`).set("x-api-key", org.apiKey)).body;

describe("callbacks", () => {
  it("an event Sent calls its callbackUrl once with event.sent, signed with webhook-id <id>.outcome, and its record shows the callback Sent", async () => {
    const org = await createTestOrganization(context);
    const destination = await receiver();
    const callbacks = await receiver();
    const id = await createEvent(org, { destination: destination.url, callbackUrl: callbacks.url });
    expect((await getEvent(org, id)).callbackUrl).toBe(callbacks.url);

    await expect.poll(() => callbacks.deliveries.length, { timeout: 15_000 }).toBe(1);
    const [delivery] = callbacks.deliveries;
    expect(delivery?.headers["webhook-id"]).toBe(`${id}.outcome`);
    const notice = verified(org, delivery as Delivery);
    expect(notice).toEqual({
      type: "event.sent",
      data: {
        id,
        status: "Sent",
        scheduledTime: expect.any(String),
        attempts: 1,
        lastResponseStatus: 200,
        lastResponseBody: '{"received":true}',
        lastError: null,
      },
    });
    await expect.poll(async () => (await getEvent(org, id)).callback?.status, { timeout: 5_000 }).toBe("Sent");
    expect((await getEvent(org, id)).callback).toMatchObject({
      url: callbacks.url,
      type: "event.sent",
      attempts: 1,
      lastResponseStatus: 200,
    });
  });

  it("an event Failed To Send calls back with event.failed; a callback answered 500 is retried and its attempts are recorded", async () => {
    const org = await createTestOrganization(context);
    const destination = await receiver({ status: () => 500 });
    const callbacks = await receiver({ status: (n) => (n === 0 ? 500 : 200) });
    const id = await createEvent(org, {
      destination: destination.url,
      callbackUrl: callbacks.url,
      retry: { delaysMs: [] },
    });

    await expect.poll(async () => (await getEvent(org, id)).callback?.status, { timeout: 15_000 }).toBe("Sent");
    expect(await statusOf(context, id)).toBe("Failed To Send");
    expect((await getEvent(org, id)).callback).toMatchObject({ attempts: 2, lastResponseStatus: 200, lastError: null });
    expect(callbacks.deliveriesOf(`${id}.outcome`)).toHaveLength(2);
    for (const delivery of callbacks.deliveries) {
      expect(verified(org, delivery)).toMatchObject({
        type: "event.failed",
        data: { id, status: "Failed To Send", attempts: 1, lastResponseStatus: 500, lastError: expect.any(String) },
      });
    }
  });

  it("a callback that keeps failing ends Failed after its retries and triggers no callback nor event.failed webhook", async () => {
    const org = await createTestOrganization(context);
    const webhooks = await receiver();
    await createWebhook(org, webhooks.url, ["event.failed", "cron.run.failed"]);
    const destination = await receiver();
    const callbacks = await receiver({ status: () => 503 });
    const id = await createEvent(org, { destination: destination.url, callbackUrl: callbacks.url });

    await expect.poll(async () => (await getEvent(org, id)).callback?.status, { timeout: 15_000 }).toBe("Failed");
    // 1 attempt and the 2 retries of RETRY_DELAYS_MS.
    expect((await getEvent(org, id)).callback).toMatchObject({ attempts: 3, lastResponseStatus: 503 });
    expect(callbacks.deliveries).toHaveLength(3);
    // The callback's failure is recorded in the statement that would have written a notice of it: none was.
    expect(await context.db.notification.count({ where: { orgId: org.orgId } })).toBe(1);
    expect(webhooks.deliveries).toHaveLength(0);
  });

  it("a cron run's outcome calls its job's callbackUrl with cron.run.failed, and the cron.run.failed webhook is told", async () => {
    const org = await createTestOrganization(context);
    const webhooks = await receiver();
    await createWebhook(org, webhooks.url, ["cron.run.failed"]);
    const destination = await receiver({ status: () => 500 });
    const callbacks = await receiver();
    const created = await request(app)
      .post("/api/cron-jobs")
      .set("x-api-key", org.apiKey)
      .send({
        payload: "{}",
        destination: destination.url,
        every: "PT1S",
        retry: { delaysMs: [] },
        callbackUrl: callbacks.url,
      });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.callbackUrl).toBe(callbacks.url);

    await expect.poll(() => callbacks.deliveries.length, { timeout: 20_000 }).toBeGreaterThan(0);
    await expect.poll(() => webhooks.deliveries.length, { timeout: 10_000 }).toBeGreaterThan(0);
    const disabled = await request(app)
      .put(`/api/cron-jobs/${created.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ status: "Disabled", callbackUrl: null });
    expect(disabled.body.callbackUrl).toBeNull();

    const callback = verified(org, callbacks.deliveries[0] as Delivery);
    expect(callback).toMatchObject({
      type: "cron.run.failed",
      data: { status: "Failed To Send", attempts: 1, lastResponseStatus: 500 },
    });
    expect(callbacks.deliveries[0]?.headers["webhook-id"]).toBe(`${callback.data.id}.outcome`);
    expect(String(callback.data.id)).toMatch(/^run_/);
    const webhook = verified(org, webhooks.deliveries[0] as Delivery);
    expect(webhook.type).toBe("cron.run.failed");
    expect(webhook.data).toMatchObject({ status: "Failed To Send" });
  });

  it("a cron run's callback is shown on that run in its job's history, still after the job's callbackUrl is removed; runs without one have none", async () => {
    const org = await createTestOrganization(context);
    const destination = await receiver();
    const callbacks = await receiver();
    const created = await request(app)
      .post("/api/cron-jobs")
      .set("x-api-key", org.apiKey)
      .send({ payload: "{}", destination: destination.url, every: "PT1S", callbackUrl: callbacks.url });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const jobId: string = created.body.id;

    await expect.poll(() => callbacks.deliveries.length, { timeout: 20_000 }).toBeGreaterThan(0);
    const edited = await request(app)
      .put(`/api/cron-jobs/${jobId}`)
      .set("x-api-key", org.apiKey)
      .send({ status: "Disabled", callbackUrl: null });
    expect(edited.status).toBe(200);
    const runId = String(verified(org, callbacks.deliveries[0] as Delivery).data.id);
    type Run = { id: string; status: string; callback?: Record<string, unknown> };
    const runOf = async (): Promise<Run | undefined> => {
      const job = await request(app).get(`/api/cron-jobs/${jobId}`).set("x-api-key", org.apiKey);
      return (job.body.history as Run[]).find((run) => run.id === runId);
    };
    await expect.poll(async () => (await runOf())?.callback?.status, { timeout: 10_000 }).toBe("Sent");
    expect((await runOf())?.callback).toEqual({
      url: callbacks.url,
      type: "cron.run.sent",
      status: "Sent",
      attempts: 1,
      lastAttemptAt: expect.any(String),
      lastResponseStatus: 200,
      lastResponseBody: '{"received":true}',
      lastError: null,
    });
    // The edit's answer carries the same history.
    const editedRun = (edited.body.history as Run[]).find((run) => run.id === runId);
    expect(editedRun?.callback?.type).toBe("cron.run.sent");

    // A job without a callbackUrl: its sent runs have no `callback`.
    const plain = await request(app)
      .post("/api/cron-jobs")
      .set("x-api-key", org.apiKey)
      .send({ payload: "{}", destination: destination.url, every: "PT1S" });
    expect(plain.status).toBe(200);
    const plainHistory = async (): Promise<Run[]> =>
      (await request(app).get(`/api/cron-jobs/${plain.body.id}`).set("x-api-key", org.apiKey)).body.history;
    await expect
      .poll(async () => (await plainHistory()).some((run) => run.status === "Sent"), { timeout: 20_000 })
      .toBe(true);
    await request(app).put(`/api/cron-jobs/${plain.body.id}`).set("x-api-key", org.apiKey).send({ status: "Disabled" });
    for (const run of await plainHistory()) expect(run).not.toHaveProperty("callback");
  });
});

describe("operational webhooks", () => {
  it("event.failed is POSTed to the webhooks asking for it, signed, and not to the others", async () => {
    const org = await createTestOrganization(context);
    const failedHooks = await receiver();
    const quotaHooks = await receiver();
    await createWebhook(org, failedHooks.url, ["event.failed"]);
    await createWebhook(org, quotaHooks.url, ["quota.reached"]);
    const destination = await receiver({ status: () => 502 });
    const id = await createEvent(org, { destination: destination.url, retry: { delaysMs: [] } });

    await expect.poll(() => failedHooks.deliveries.length, { timeout: 15_000 }).toBe(1);
    const delivery = failedHooks.deliveries[0] as Delivery;
    expect(delivery.headers["webhook-id"]).toMatch(/^ntf_/);
    expect(verified(org, delivery)).toMatchObject({
      type: "event.failed",
      data: { id, status: "Failed To Send", attempts: 1, lastResponseStatus: 502 },
    });
    expect(quotaHooks.deliveries).toHaveLength(0);
  });

  it("destination.unhealthy when the breaker opens, then destination.healthy when a probe succeeds, each once", async () => {
    const org = await createTestOrganization(context);
    const hooks = await receiver();
    await createWebhook(org, hooks.url, ["destination.unhealthy", "destination.healthy"]);
    let answer = 503;
    const destination = await receiver({ status: () => answer });
    const origin = new URL(destination.url).origin;
    for (let n = 0; n < 3; n++) {
      await createEvent(org, {
        destination: destination.url,
        retry: { delaysMs: Array.from({ length: 20 }, () => 200) },
      });
    }
    const typesSeen = () => hooks.deliveries.map((delivery) => verified(org, delivery).type);
    await expect.poll(typesSeen, { timeout: 20_000 }).toEqual(["destination.unhealthy"]);
    expect(verified(org, hooks.deliveries[0] as Delivery).data).toMatchObject({ origin, state: "Unhealthy" });
    answer = 200;
    await expect.poll(typesSeen, { timeout: 20_000 }).toEqual(["destination.unhealthy", "destination.healthy"]);
    expect(verified(org, hooks.deliveries[1] as Delivery).data).toMatchObject({ origin, state: "Healthy" });
  });

  it("quota.warning at 80 % of the month's limit and quota.reached at the limit, each once", async () => {
    const org = await createTestOrganization(context);
    const hooks = await receiver();
    await createWebhook(org, hooks.url, ["quota.warning", "quota.reached"]);
    const destination = await receiver();
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const typesSeen = () => hooks.deliveries.map((delivery) => verified(org, delivery).type);
    for (let n = 1; n <= 7; n++) await createEvent(org, { destination: destination.url, scheduledTime: later });
    expect(await context.db.notification.count({ where: { orgId: org.orgId } })).toBe(0);
    await createEvent(org, { destination: destination.url, scheduledTime: later });
    await expect.poll(typesSeen, { timeout: 10_000 }).toEqual(["quota.warning"]);
    await createEvent(org, { destination: destination.url, scheduledTime: later });
    await createEvent(org, { destination: destination.url, scheduledTime: later });
    const refused = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send({ payload: "{}", destination: destination.url, scheduledTime: later });
    expect(refused.status).toBe(403);
    await expect.poll(typesSeen, { timeout: 10_000 }).toEqual(["quota.warning", "quota.reached"]);
    expect(verified(org, hooks.deliveries[1] as Delivery).data).toMatchObject({
      used: MONTHLY_LIMIT,
      limit: MONTHLY_LIMIT,
    });
    // One per month: the notices are written once, whatever more creates are refused.
    expect(await context.db.notification.count({ where: { orgId: org.orgId } })).toBe(2);
  });
});

describe("the webhooks API", () => {
  it("creates, lists and deletes webhooks, at most 5 per organization, and refuses unknown types", async () => {
    const org = await createTestOrganization(context);
    const api = () => request(app);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push(await createWebhook(org, `https://example.com/hook/${n}`, ["event.failed"]));
    const sixth = await api()
      .post("/api/webhooks")
      .set("x-api-key", org.apiKey)
      .send({ url: "https://example.com/6", types: ["quota.reached"] });
    expect(sixth.status).toBe(403);
    expect(sixth.body).toEqual({ message: "Webhook limit of 5 reached for this organization" });
    const badType = await api()
      .post("/api/webhooks")
      .set("x-api-key", org.apiKey)
      .send({ url: "https://example.com/7", types: ["event.sent"] });
    expect(badType.status).toBe(400);
    expect(badType.body.message).toMatch(/^Each type must be one of event\.failed/);
    const listed = await api().get("/api/webhooks").set("x-api-key", org.apiKey);
    expect(listed.body.webhooks.map((webhook: { id: string }) => webhook.id)).toEqual(ids);
    expect((await api().delete(`/api/webhooks/${ids[0]}`).set("x-api-key", org.apiKey)).status).toBe(204);
    const again = await api().delete(`/api/webhooks/${ids[0]}`).set("x-api-key", org.apiKey);
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ message: "Unable to find webhook" });
  });

  it("an event's callbackUrl is null without one, refused when not an http URL, and cleared by null", async () => {
    const org = await createTestOrganization(context);
    const destination = "https://example.com/d";
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const plain = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send({ payload: "{}", destination, scheduledTime: later });
    expect(plain.body.callbackUrl).toBeNull();
    const bad = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send({ payload: "{}", destination, scheduledTime: later, callbackUrl: "ftp://example.com" });
    expect(bad.status).toBe(400);
    expect(bad.body).toEqual({ message: "'callbackUrl' must be an http or https URL" });
    const withCallback = await createEvent(org, {
      destination,
      scheduledTime: later,
      callbackUrl: "https://example.com/c",
    });
    const cleared = await request(app)
      .put(`/api/events/${withCallback}`)
      .set("x-api-key", org.apiKey)
      .send({ callbackUrl: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.callbackUrl).toBeNull();
  });
});
