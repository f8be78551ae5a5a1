import { buildDeliveryRequest, type EventQueue } from "@punctual/core";
import type { Request, Response } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createPunctualAdminClient,
  createPunctualClient,
  type PunctualClient,
} from "../../packages/client/src/index.ts";
import {
  type VerifiedDelivery,
  verifyWebhook,
  WebhookVerificationError,
  WebhookVerifier,
} from "../../packages/client/src/webhooks.ts";
import { createTestApiDeps, createTestContext, type TestContext } from "../support/context.ts";
import { scheduleEvent } from "../support/events.ts";
import { type LiveApi, startLiveApi } from "../support/live-api.ts";
import { type Delivery, type Receiver, startReceiver, startTestReceiver } from "../support/receiver.ts";
import { startTestWorker } from "../support/worker.ts";

// @punctual/client/webhooks against real deliveries: events of organizations made with the admin
// client through a listening API, delivered by a real worker to a loopback receiver that keeps each request's raw
// body and headers, then verified, under both signature schemes, with secrets Punctual generated,
// a custom secret, and a secret rotated with and without its overlap.

const ADMIN_TOKEN = "hook-Zx8cV2bN5mQ7wE3rT6yU";
/** Not `whsec_…`: any text of 24–256 characters, whose UTF-8 bytes are the key (non-ASCII included). */
const CUSTOM_SECRET = "our own signing secret, façade-proof 2026";

let context: TestContext;
let api: LiveApi;
let receiver: Receiver;
let eventQueue: EventQueue;

beforeAll(async () => {
  // One retry, soon: a delivery the verifying receiver refuses ends Failed To Send quickly.
  context = await createTestContext({ ADMIN_TOKEN, RETRY_DELAYS_MS: "200", WORKER_HEALTH_PORT: "0" });
  api = await startLiveApi(context);
  receiver = await startTestReceiver(context);
  eventQueue = createTestApiDeps(context).deps.eventQueue;
  await startTestWorker(context);
});
afterAll(() => context?.close());

const admin = () => createPunctualAdminClient({ baseUrl: api.baseUrl, adminToken: ADMIN_TOKEN });

interface Organization {
  orgId: string;
  signingSecret: string;
  client: PunctualClient;
}

/** A new organization, made through the admin API, with a client holding its key. */
async function organization(signingSecret?: string): Promise<Organization> {
  const email = `hooks-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await admin().organizations.create({
    email,
    name: "Hooks",
    ...(signingSecret ? { signingSecret } : {}),
  });
  return {
    orgId: created.orgId,
    signingSecret: created.signingSecret,
    client: createPunctualClient({ baseUrl: api.baseUrl, apiKey: created.apiKey }),
  };
}

const PAYLOAD = JSON.stringify({ order: 42, note: '€ "quoted"' });

/**
 * Schedules an event due in a moment, as the API does (straight through the event queue: the API's
 * check that the time is still ahead could fail on a loaded machine), and answers it with the
 * request the receiver got for it.
 */
async function deliveryOf(org: Organization, to: Receiver = receiver) {
  const record = await scheduleEvent(context, eventQueue, {
    orgId: org.orgId,
    payload: PAYLOAD,
    destination: to.url,
    scheduledTime: new Date(Date.now() + 300),
  });
  const event = { id: record.id, scheduledTime: record.scheduledTime.toISOString() };
  await expect.poll(() => to.deliveriesOf(event.id).length).toBeGreaterThan(0);
  return { event, delivery: to.deliveriesOf(event.id)[0] as Delivery };
}

const verify = (delivery: Delivery, secret: string | string[], scheme?: "standard-webhooks" | "jiter") =>
  new WebhookVerifier({ secret, ...(scheme ? { scheme } : {}) }).verify(delivery.rawBody, delivery.headers);

/** What verify threw (or a failure of the test when it did not throw). */
function refusal(check: () => VerifiedDelivery): WebhookVerificationError {
  try {
    check();
  } catch (error) {
    expect(error).toBeInstanceOf(WebhookVerificationError);
    return error as WebhookVerificationError;
  }
  throw new Error("expected the delivery to be refused");
}

describe("a secret Punctual generated (whsec_…)", () => {
  let org: Organization;
  beforeAll(async () => {
    org = await organization();
  });

  it("webhook-signature (the default scheme) verifies, and the delivery's signed id, payload and time come back", async () => {
    const { event, delivery } = await deliveryOf(org);
    const before = Date.now();

    const verified = verify(delivery, org.signingSecret);

    expect(org.signingSecret).toMatch(/^whsec_/);
    expect(verified).toEqual({
      scheme: "standard-webhooks",
      id: event.id,
      timestamp: expect.any(Date),
      payload: PAYLOAD,
      scheduledTime: event.scheduledTime,
    });
    // The attempt's own moment, in whole seconds: at most a few seconds ago.
    expect(before - verified.timestamp.getTime()).toBeLessThan(10_000);
  });

  it("X-Jiter-Signature verifies under the jiter scheme, which cannot vouch for the id", async () => {
    const { event, delivery } = await deliveryOf(org);

    const verified = verify(delivery, org.signingSecret, "jiter");

    expect(verified).toMatchObject({ scheme: "jiter", id: null, payload: PAYLOAD, scheduledTime: event.scheduledTime });
    expect(verified.timestamp.getTime()).toBe(Number(delivery.headers["x-jiter-request-timestamp"]));
  });

  it("takes the raw body as bytes and the headers as a Fetch Headers object too", async () => {
    const { event, delivery } = await deliveryOf(org);
    const headers = new Headers();
    for (const [name, value] of Object.entries(delivery.headers))
      if (typeof value === "string") headers.set(name, value);
    const bytes = new TextEncoder().encode(delivery.rawBody);

    for (const scheme of ["standard-webhooks", "jiter"] as const) {
      const verified = verifyWebhook(bytes, headers, { secret: org.signingSecret, scheme });
      expect(verified).toMatchObject({ scheme, payload: PAYLOAD, scheduledTime: event.scheduledTime });
    }
  });

  it("refuses, under both schemes, a delivery signed with another organization's secret", async () => {
    const other = await organization();
    const { delivery } = await deliveryOf(other);

    expect(refusal(() => verify(delivery, org.signingSecret)).message).toBe("No matching signature found");
    expect(refusal(() => verify(delivery, org.signingSecret, "jiter")).message).toBe("No matching signature found");
  });

  it("refuses, under both schemes, a delivery whose body was changed on the way", async () => {
    const { delivery } = await deliveryOf(org);
    const changed = { ...delivery, rawBody: delivery.rawBody.replace("42", "43") };

    expect(changed.rawBody).not.toBe(delivery.rawBody);
    expect(refusal(() => verify(changed, org.signingSecret)).message).toBe("No matching signature found");
    expect(refusal(() => verify(changed, org.signingSecret, "jiter")).message).toBe("No matching signature found");
  });

  it("refuses, under both schemes, a correctly signed delivery sent 10 minutes ago (a replay)", () => {
    const request = buildDeliveryRequest({
      webhookId: "evt_01kaaaaaaaaaaaaaaaaaaaaaaa",
      payload: PAYLOAD,
      scheduledTime: new Date(),
      signingSecret: org.signingSecret,
      now: new Date(Date.now() - 10 * 60_000),
    });
    const lower = Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const stale = { at: Date.now(), rawBody: request.body, headers: lower, path: "/hook", method: "POST" };

    expect(refusal(() => verify(stale, org.signingSecret)).message).toBe("Message timestamp too old");
    expect(refusal(() => verify(stale, org.signingSecret, "jiter")).message).toBe("Message timestamp too old");
  });

  it("refuses a request without the scheme's headers", async () => {
    const { delivery } = await deliveryOf(org);
    const { "webhook-signature": _standard, "x-jiter-signature": _jiter, ...unsigned } = delivery.headers;
    const stripped = { ...delivery, headers: unsigned };

    expect(refusal(() => verify(stripped, org.signingSecret)).message).toBe("Missing required headers");
    expect(refusal(() => verify(stripped, org.signingSecret, "jiter")).message).toBe("Missing required headers");
  });
});

describe("a custom secret (not whsec_…)", () => {
  it("verifies a real delivery under both schemes, keyed by the secret's UTF-8 bytes", async () => {
    const org = await organization(CUSTOM_SECRET);
    const { event, delivery } = await deliveryOf(org);

    expect(org.signingSecret).toBe(CUSTOM_SECRET);
    expect(verify(delivery, CUSTOM_SECRET)).toMatchObject({ id: event.id, payload: PAYLOAD });
    expect(verify(delivery, CUSTOM_SECRET, "jiter")).toMatchObject({ scheme: "jiter", payload: PAYLOAD });
  });
});

describe("a whsec_ secret whose rest is not padded base64", () => {
  it("is keyed by its UTF-8 bytes, as Punctual signs with it, under both schemes", () => {
    // Punctual treats such a secret as a custom one; the library alone would decode it leniently.
    const secret = "whsec_this-is-not-base64, but a custom secret";
    const request = buildDeliveryRequest({
      webhookId: "evt_01kbbbbbbbbbbbbbbbbbbbbbbb",
      payload: PAYLOAD,
      scheduledTime: new Date(),
      signingSecret: secret,
      now: new Date(),
    });
    const headers = Object.fromEntries(
      Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value]),
    );
    const delivery = { at: Date.now(), rawBody: request.body, headers, path: "/hook", method: "POST" };

    expect(verify(delivery, secret)).toMatchObject({ id: "evt_01kbbbbbbbbbbbbbbbbbbbbbbb", payload: PAYLOAD });
    expect(verify(delivery, secret, "jiter")).toMatchObject({ payload: PAYLOAD });
  });
});

describe("a rotated secret", () => {
  /** An organization whose secret was just rotated (the old one still signs), and a delivery of it. */
  async function rotated() {
    const org = await organization();
    const newSecret = (await admin().signingSecrets.rotate(org.orgId)).signingSecret;
    return { org, oldSecret: org.signingSecret, newSecret, ...(await deliveryOf(org)) };
  }

  it("during the overlap, webhook-signature holds a v1 entry per secret and either secret alone verifies it", async () => {
    const { delivery, oldSecret, newSecret } = await rotated();

    expect(String(delivery.headers["webhook-signature"])).toMatch(/^v1,\S+ v1,\S+$/);
    expect(verify(delivery, newSecret)).toMatchObject({ scheme: "standard-webhooks", payload: PAYLOAD });
    expect(verify(delivery, oldSecret)).toMatchObject({ scheme: "standard-webhooks", payload: PAYLOAD });
  });

  it("during the overlap, X-Jiter-Signature is the previous secret's: the new one alone is refused, both verify", async () => {
    const { delivery, oldSecret, newSecret } = await rotated();

    expect(refusal(() => verify(delivery, newSecret, "jiter")).message).toBe("No matching signature found");
    expect(verify(delivery, oldSecret, "jiter")).toMatchObject({ scheme: "jiter" });
    expect(verify(delivery, [newSecret, oldSecret], "jiter")).toMatchObject({ scheme: "jiter" });
  });

  it("once the overlap has ended, only the new secret verifies, under both schemes", async () => {
    const { org, oldSecret, newSecret } = await rotated();
    await admin().signingSecrets.endOverlap(org.orgId);
    const { delivery } = await deliveryOf(org);

    expect(String(delivery.headers["webhook-signature"])).toMatch(/^v1,\S+$/);
    expect(verify(delivery, newSecret)).toMatchObject({ payload: PAYLOAD });
    expect(verify(delivery, newSecret, "jiter")).toMatchObject({ payload: PAYLOAD });
    expect(refusal(() => verify(delivery, oldSecret)).message).toBe("No matching signature found");
    expect(refusal(() => verify(delivery, oldSecret, "jiter")).message).toBe("No matching signature found");
    // A receiver still holding both secrets keeps verifying.
    expect(verify(delivery, [oldSecret, newSecret])).toMatchObject({ payload: PAYLOAD });
  });
});

describe("a receiver answering with the verifier's verdict", () => {
  let verifying: Receiver;
  let org: Organization;

  beforeAll(async () => {
    org = await organization();
    const verifier = new WebhookVerifier({ secret: org.signingSecret });
    verifying = await startReceiver({
      // Answers 401 itself to a delivery that does not verify; the recorder answers 200 to the others.
      mount: (app) =>
        app.use((req: Request, res: Response, next) => {
          try {
            verifier.verify((req as unknown as { rawBody: string }).rawBody, req.headers);
            next();
          } catch {
            res.status(401).json({ message: "Invalid signature" });
          }
        }),
    });
  });
  afterAll(async () => {
    await verifying?.close();
  });

  it("its own organization's event ends Sent after one attempt answered 200", async () => {
    const { event } = await deliveryOf(org, verifying);

    await expect.poll(async () => (await org.client.events.get(event.id)).status).toBe("Sent");
    expect((await org.client.events.get(event.id)).history.map((attempt) => attempt.responseStatus)).toEqual([200]);
  });

  it("another organization's event is refused at every attempt and ends Failed To Send", async () => {
    const other = await organization();
    const { event } = await deliveryOf(other, verifying);

    await expect.poll(async () => (await other.client.events.get(event.id)).status).toBe("Failed To Send");
    expect((await other.client.events.get(event.id)).history.map((attempt) => attempt.responseStatus)).toEqual([
      401, 401,
    ]);
  });
});

describe("WebhookVerifier", () => {
  it("needs a secret", () => {
    expect(() => new WebhookVerifier({ secret: [] })).toThrow(TypeError);
    expect(() => new WebhookVerifier({ secret: "" })).toThrow(TypeError);
  });
});
