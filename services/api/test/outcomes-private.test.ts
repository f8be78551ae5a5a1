import { systemClock } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../../../test/support/context.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";
import { createApp } from "../src/app.ts";

// With private destinations refused (ALLOW_PRIVATE_DESTINATIONS=false, the production default), no
// callback or operational webhook reaches a loopback address: the API refuses such a callbackUrl or
// webhook url, and a notice whose URL is private anyway (a name resolving to one is only known when
// sent: here written straight into the outbox) fails at the worker's guard without a request.

let context: TestContext;
let app: ReturnType<typeof createApp>;
let receiver: Receiver;
let org: TestOrganization;

beforeAll(async () => {
  ({ context, org, receiver } = await createDeliveryContext({
    ALLOW_PRIVATE_DESTINATIONS: "false",
    RETRY_DELAYS_MS: "100",
  }));
  app = createApp(createTestApiDeps(context, systemClock).deps);
});

afterAll(() => context?.close());

it("refuses a loopback callbackUrl on events and cron jobs and a loopback webhook url, writing nothing", async () => {
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const refusal =
    "Destination address is not allowed: 127.0.0.1 is a loopback, private, link-local or reserved address, " +
    "which this server refuses unless ALLOW_PRIVATE_DESTINATIONS=true";
  const event = await request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send({ payload: "{}", destination: "https://example.com/", scheduledTime: later, callbackUrl: receiver.url });
  expect(event.status).toBe(400);
  expect(event.body).toEqual({ message: refusal });
  const cron = await request(app)
    .post("/api/cron-jobs")
    .set("x-api-key", org.apiKey)
    .send({ payload: "{}", destination: "https://example.com/", expression: "0 * * * *", callbackUrl: receiver.url });
  expect(cron.status).toBe(400);
  expect(cron.body).toEqual({ message: refusal });
  const webhook = await request(app)
    .post("/api/webhooks")
    .set("x-api-key", org.apiKey)
    .send({ url: receiver.url, types: ["event.failed"] });
  expect(webhook.status).toBe(400);
  expect(webhook.body).toEqual({ message: refusal });
  expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(0);
  expect(await context.db.cronJob.count({ where: { orgId: org.orgId } })).toBe(0);
  expect(await context.db.webhook.count({ where: { orgId: org.orgId } })).toBe(0);
});

it("a callback and a webhook notice to a loopback address end Failed at the worker's guard, and the receiver gets nothing", async () => {
  const now = new Date();
  const rows = [
    { id: "ntf_private_callback", kind: "callback", type: "event.sent", webhookId: "evt_x.outcome" },
    { id: "ntf_private_webhook", kind: "webhook", type: "event.failed", webhookId: "ntf_private_webhook" },
  ];
  await context.db.notification.createMany({
    data: rows.map((row) => ({
      ...row,
      orgId: org.orgId,
      subjectId: "evt_x",
      url: receiver.url,
      data: "{}",
      dedupeKey: row.id,
      nextAttemptAt: now,
    })),
  });
  const states = () =>
    context.db.notification.findMany({
      where: { id: { in: rows.map((row) => row.id) } },
      select: { status: true, attempts: true, lastError: true, lastResponseStatus: true },
    });
  await expect
    .poll(async () => (await states()).map((row) => row.status), { timeout: 15_000 })
    .toEqual(["Failed", "Failed"]);
  for (const row of await states()) {
    expect(row).toEqual({
      status: "Failed",
      attempts: 2,
      lastError: "Destination address is not allowed",
      lastResponseStatus: null,
    });
  }
  expect(receiver.deliveries).toHaveLength(0);
});
