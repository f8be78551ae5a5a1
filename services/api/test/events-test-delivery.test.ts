import { init, webhookHandler } from "@jiter/node";
import { refusedDestinationMessage, rotateSigningSecret, systemClock } from "@punctual/core";
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
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createApp } from "../src/app.ts";

// POST /api/events/test: one signed delivery sent by the API now, to a real receiver on loopback
// (private destinations are allowed in tests unless a case turns them off).

const TOO_MANY = "Too many test deliveries, please try again later";

let context: TestContext;
let app: ReturnType<typeof createApp>;
let receiver: Receiver;
let org: TestOrganization;
const verifiedByJiter: { payload: unknown; scheduledTime: Date }[] = [];

beforeAll(async () => {
  context = await createTestContext({ DELIVERY_TIMEOUT_MS: "1000" });
  org = await createTestOrganization(context);
  init({ apiKey: org.apiKey, signingSecret: org.signingSecret, baseUrl: "http://127.0.0.1:1/api" });
  receiver = await startReceiver({
    mount: (receiving) => {
      // The SDK's own middleware: 200 when the signature is valid, 401 otherwise.
      receiving.post(
        "/jiter",
        webhookHandler(async ({ payload, scheduledTime }) => {
          verifiedByJiter.push({ payload, scheduledTime });
        }),
      );
      receiving.post("/teapot", (_req, res) => {
        res
          .status(418)
          .type("text/plain")
          .send(`short and stout ${"x".repeat(2000)}`);
      });
    },
  });
  app = createApp(createTestApiDeps(context, systemClock).deps);
});

afterAll(async () => {
  await receiver.close();
  await context.close();
});

const at = (path: string) => receiver.url.replace(/\/hook$/, path);

const testDelivery = (body: object, who: TestOrganization = org, on = app) =>
  request(on).post("/api/events/test").set("x-api-key", who.apiKey).send(body);

async function usageRows(orgId: string): Promise<number> {
  const rows = await context.db.$queryRaw<{ n: number }[]>`
    SELECT COALESCE(SUM(count), 0)::int AS n FROM event_monthly_usage WHERE org_id = ${orgId}`;
  return rows[0]?.n ?? 0;
}

describe("POST /api/events/test", () => {
  it("sends one delivery signed like a real one, which the receiver verifies, and answers with its outcome", async () => {
    const payload = JSON.stringify({ ping: true });
    const before = Date.now();

    const response = await testDelivery({ destination: receiver.url, payload });

    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      responseStatus: 200,
      durationMs: expect.any(Number),
      responseBody: '{"received":true}',
      error: null,
    });
    const [delivery, ...more] = receiver.deliveries.filter((d) => d.path === "/hook");
    expect(more).toHaveLength(0);
    if (!delivery) throw new Error("no delivery");
    const webhookId = String(delivery.headers["webhook-id"]);
    expect(webhookId).toMatch(/^evt_test_[0-9a-z]{26}$/);
    const body = JSON.parse(delivery.rawBody);
    expect(body.payload).toBe(payload);
    const scheduledTime = new Date(body.scheduledTime).getTime();
    expect(scheduledTime).toBeGreaterThanOrEqual(before);
    expect(scheduledTime).toBeLessThanOrEqual(Date.now());
    expect(delivery.headers["content-type"]).toBe("application/json");
    expect(delivery.headers["user-agent"]).toMatch(/^Punctual\//);
    const verified = new Webhook(org.signingSecret).verify(delivery.rawBody, {
      "webhook-id": webhookId,
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": String(delivery.headers["webhook-signature"]),
    });
    expect(verified).toEqual(body);
  });

  it("passes @jiter/node's verification, with `{}` as the payload when none is given", async () => {
    const response = await testDelivery({ destination: at("/jiter") });

    expect(response.status).toBe(200);
    expect(response.body.responseStatus).toBe(200);
    expect(verifiedByJiter).toContainEqual({ payload: "{}", scheduledTime: expect.any(Date) });
  });

  it("is signed with both secrets while a rotation's overlap lasts, as a real delivery is", async () => {
    const rotating = await createTestOrganization(context);
    const { signingSecret } = await rotateSigningSecret(context, { orgId: rotating.orgId });
    const path = "/rotating";

    expect((await testDelivery({ destination: at(path) }, rotating)).status).toBe(200);

    const [delivery] = receiver.deliveries.filter((d) => d.path === path);
    if (!delivery) throw new Error("no delivery");
    const headers = {
      "webhook-id": String(delivery.headers["webhook-id"]),
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": String(delivery.headers["webhook-signature"]),
    };
    for (const secret of [signingSecret, rotating.signingSecret]) {
      expect(new Webhook(secret).verify(delivery.rawBody, headers)).toEqual(JSON.parse(delivery.rawBody));
    }
  });

  it("reports a receiver's error status and the first 1024 bytes of its body", async () => {
    const response = await testDelivery({ destination: at("/teapot") });

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ responseStatus: 418, error: "Receiver answered 418" });
    expect(response.body.responseBody).toMatch(/^short and stout x+$/);
    expect(Buffer.byteLength(response.body.responseBody)).toBe(1024);
  });

  it("reports a receiver that cannot be reached as an error with no status", async () => {
    const closed = await startReceiver();
    await closed.close();

    const response = await testDelivery({ destination: closed.url });

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({ responseStatus: null, responseBody: null, durationMs: expect.any(Number) });
    expect(response.body.error).toMatch(/ECONNREFUSED|refused/i);
  });

  it("creates no event and takes nothing from the monthly quota", async () => {
    const own = await createTestOrganization(context);
    const response = await testDelivery({ destination: receiver.url }, own);

    expect(response.status).toBe(200);
    expect(await context.db.event.count({ where: { orgId: own.orgId } })).toBe(0);
    expect(await usageRows(own.orgId)).toBe(0);
    const listed = await request(app).get("/api/events").set("x-api-key", own.apiKey);
    expect(listed.body).toEqual([]);
  });

  it("allows 10 test deliveries a minute per organization, then answers 429 with Retry-After", async () => {
    const limited = await createTestOrganization(context);
    const path = "/limited";
    const answers = [];
    for (let n = 0; n < 10; n++) answers.push(await testDelivery({ destination: at(path) }, limited));
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));

    const refused = await testDelivery({ destination: at(path) }, limited);

    expect({ status: refused.status, body: refused.body }).toEqual({ status: 429, body: { message: TOO_MANY } });
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(receiver.deliveries.filter((delivery) => delivery.path === path)).toHaveLength(10);
    // Another organization has its own budget.
    const other = await createTestOrganization(context);
    expect((await testDelivery({ destination: at(path) }, other)).status).toBe(200);
  });

  it("refuses a private destination when private destinations are not allowed, and sends nothing", async () => {
    const strict = createApp({
      ...createTestApiDeps(context, systemClock).deps,
      config: { ...context.config, ALLOW_PRIVATE_DESTINATIONS: false },
    });
    const path = "/private";
    for (const destination of [at(path), at(path).replace("127.0.0.1", "localhost")]) {
      const response = await testDelivery({ destination }, org, strict);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 400,
        body: { message: refusedDestinationMessage(new URL(destination).hostname) },
      });
    }
    expect(receiver.deliveries.filter((delivery) => delivery.path === path)).toHaveLength(0);
  });

  it("refuses an invalid body", async () => {
    const cases: [object, string][] = [
      [{}, "'destination' is required"],
      [{ destination: "ftp://example.com/x" }, "Destination must be an http or https URL"],
      [{ destination: receiver.url, payload: "x".repeat(2000) }, "Payload must be at most 1024 bytes"],
      [{ destination: receiver.url, scheduledTime: new Date().toISOString() }, "Unknown field 'scheduledTime'"],
    ];
    for (const [body, message] of cases) {
      const response = await testDelivery(body);
      expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
    }
  });
});
