import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { init as initJiter, webhookHandler } from "@jiter/node";
import express from "express";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { buildDeliveryRequest, DEFAULT_USER_AGENT, standardWebhooksKey } from "./signing.ts";

interface Received {
  rawBody: Buffer;
  headers: Record<string, string>;
  handled: { payload: unknown; scheduledTime: Date }[];
}

interface Receiver {
  url: string;
  received: Received[];
  close(): Promise<void>;
}

const receivers: Receiver[] = [];

afterEach(async () => {
  await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
});

/**
 * A real receiver on loopback guarded by @jiter/node's own middleware. It keeps the raw bytes and
 * headers of every request so the same delivery can also be checked with `standardwebhooks`.
 */
async function startJiterReceiver(signingSecret: string): Promise<Receiver> {
  // @jiter/node is CommonJS; its named exports (`init`, and `webhookHandler`, which the SDK object
  // also exposes as `Middleware.webhookHandler`) load the same way under Node and vitest, unlike
  // the default export. It keeps one global config per process; baseUrl is never called here.
  initJiter({ apiKey: "pk_test_unused", signingSecret, baseUrl: "http://127.0.0.1:9" });
  const received: Received[] = [];
  const app = express();
  app.post(
    "/hook",
    express.json({
      verify: (req, _res, buffer) => {
        const headers: Record<string, string> = {};
        for (const [name, value] of Object.entries(req.headers)) {
          if (typeof value === "string") headers[name] = value;
        }
        received.push({ rawBody: Buffer.from(buffer), headers, handled: [] });
      },
    }),
    webhookHandler(async ({ payload, scheduledTime }) => {
      received.at(-1)?.handled.push({ payload, scheduledTime });
    }),
  );
  const server = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  receivers.push(receiver);
  return receiver;
}

function post(url: string, request: { body: string; headers: Record<string, string> }): Promise<Response> {
  return fetch(url, { method: "POST", body: request.body, headers: request.headers });
}

const whsecSecret = () => `whsec_${randomBytes(32).toString("base64")}`;
const scheduledTime = new Date("2030-05-17T08:30:00.000Z");

describe("buildDeliveryRequest", () => {
  it("builds the exact body, with scheduledTime in milliseconds and payload first", () => {
    const now = new Date("2030-05-17T08:30:00.123Z");
    const request = buildDeliveryRequest({
      webhookId: "evt_01",
      payload: '{"hello":"world"}',
      scheduledTime: new Date("2030-05-17T08:30:00Z"),
      signingSecret: whsecSecret(),
      now,
    });
    expect(request.body).toBe('{"payload":"{\\"hello\\":\\"world\\"}","scheduledTime":"2030-05-17T08:30:00.000Z"}');
    expect(request.headers).toMatchObject({
      "Content-Type": "application/json",
      "User-Agent": DEFAULT_USER_AGENT,
      "X-Jiter-Request-Timestamp": "1905237000123",
      "webhook-id": "evt_01",
      "webhook-timestamp": "1905237000",
    });
    expect(request.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(request.headers["X-Jiter-Signature"]).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  });

  it("sends a scheduledTime given as a string in the same UTC millisecond form", () => {
    const request = buildDeliveryRequest({
      webhookId: "evt_02",
      payload: "x",
      scheduledTime: "2030-05-17T10:30:00+02:00",
      signingSecret: whsecSecret(),
      now: new Date(),
    });
    expect(request.body).toBe('{"payload":"x","scheduledTime":"2030-05-17T08:30:00.000Z"}');
  });

  it("keeps webhook-id across retries while the timestamps and signatures move with now", () => {
    const base = { webhookId: "run_7", payload: "x", scheduledTime, signingSecret: whsecSecret() };
    const first = buildDeliveryRequest({ ...base, now: new Date(1_000_000) });
    const retry = buildDeliveryRequest({ ...base, now: new Date(4_000_000) });
    expect(retry.body).toBe(first.body);
    expect(retry.headers["webhook-id"]).toBe("run_7");
    expect(retry.headers["webhook-signature"]).not.toBe(first.headers["webhook-signature"]);
    expect(retry.headers["X-Jiter-Signature"]).not.toBe(first.headers["X-Jiter-Signature"]);
  });

  it("uses the user agent it is given", () => {
    const request = buildDeliveryRequest({
      webhookId: "evt_1",
      payload: "x",
      scheduledTime,
      signingSecret: whsecSecret(),
      now: new Date(),
      userAgent: "Punctual/9.9.9",
    });
    expect(request.headers["User-Agent"]).toBe("Punctual/9.9.9");
  });
});

describe("@jiter/node's webhookHandler", () => {
  it("accepts a delivery built here and hands the payload and scheduled time to the handler", async () => {
    const secret = whsecSecret();
    const receiver = await startJiterReceiver(secret);
    const payload = JSON.stringify({ orderId: 42, note: "ship it" });
    const request = buildDeliveryRequest({
      webhookId: "evt_a",
      payload,
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });

    const response = await post(receiver.url, request);

    expect(response.status).toBe(200);
    await expect.poll(() => receiver.received[0]?.handled.length).toBe(1);
    const [delivery] = receiver.received;
    expect(delivery?.rawBody.toString("utf8")).toBe(request.body);
    expect(delivery?.handled[0]).toEqual({ payload, scheduledTime });
  });

  it("rejects a delivery whose body was changed after signing", async () => {
    const secret = whsecSecret();
    const receiver = await startJiterReceiver(secret);
    const request = buildDeliveryRequest({
      webhookId: "evt_b",
      payload: "amount=10",
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });

    const response = await post(receiver.url, { ...request, body: request.body.replace("amount=10", "amount=99") });

    expect(response.status).toBe(401);
    expect(receiver.received[0]?.handled).toEqual([]);
  });

  it("rejects a delivery signed with another secret or a changed timestamp", async () => {
    const secret = whsecSecret();
    const receiver = await startJiterReceiver(secret);
    const now = new Date();
    const foreign = buildDeliveryRequest({
      webhookId: "evt_c",
      payload: "x",
      scheduledTime,
      signingSecret: whsecSecret(),
      now,
    });
    const genuine = buildDeliveryRequest({
      webhookId: "evt_c",
      payload: "x",
      scheduledTime,
      signingSecret: secret,
      now,
    });
    const shifted = {
      ...genuine,
      headers: { ...genuine.headers, "X-Jiter-Request-Timestamp": String(now.getTime() + 1) },
    };

    expect((await post(receiver.url, foreign)).status).toBe(401);
    expect((await post(receiver.url, shifted)).status).toBe(401);
    expect((await post(receiver.url, genuine)).status).toBe(200);
  });

  it("throws (so Express answers 500) on a signature older than two minutes", async () => {
    // signatureIsValid throws instead of returning false for an expired timestamp: the timestamp
    // must be taken at each attempt, never at scheduling time.
    const secret = whsecSecret();
    const receiver = await startJiterReceiver(secret);
    const stale = buildDeliveryRequest({
      webhookId: "evt_d",
      payload: "x",
      scheduledTime,
      signingSecret: secret,
      now: new Date(Date.now() - 3 * 60_000),
    });

    const response = await post(receiver.url, stale);

    expect(response.status).toBe(500);
    expect(receiver.received[0]?.handled).toEqual([]);
  });

  it("accepts a custom (non-whsec) secret keyed with its UTF-8 bytes", async () => {
    const secret = "my own sécret 🔑 with spaces";
    const receiver = await startJiterReceiver(secret);
    const request = buildDeliveryRequest({
      webhookId: "evt_e",
      payload: "x",
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });

    expect((await post(receiver.url, request)).status).toBe(200);
    await expect.poll(() => receiver.received[0]?.handled.length).toBe(1);
  });

  it("delivers a payload with unicode, quotes and escapes byte for byte", async () => {
    const secret = whsecSecret();
    const receiver = await startJiterReceiver(secret);
    const payload = JSON.stringify({
      text: 'Grüße "quoted" \\ back\\slash 日本語 🚀',
      lineSeparator: "\u2028",
      tab: "\t",
    });
    const request = buildDeliveryRequest({
      webhookId: "evt_f",
      payload,
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });

    const response = await post(receiver.url, request);

    expect(response.status).toBe(200);
    await expect.poll(() => receiver.received[0]?.handled.length).toBe(1);
    const [delivery] = receiver.received;
    expect(
      delivery?.rawBody.equals(
        Buffer.from(JSON.stringify({ payload, scheduledTime: scheduledTime.toISOString() }), "utf8"),
      ),
    ).toBe(true);
    expect(delivery?.handled[0]?.payload).toBe(payload);
  });
});

describe("standardwebhooks verification", () => {
  it("accepts a delivery signed with a whsec_ secret, as received over HTTP", async () => {
    const secret = whsecSecret();
    const receiver = await startJiterReceiver(secret);
    const request = buildDeliveryRequest({
      webhookId: "evt_g",
      payload: 'héllo "there"',
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });

    await post(receiver.url, request);

    await expect.poll(() => receiver.received.length).toBe(1);
    const [delivery] = receiver.received;
    if (!delivery) throw new Error("no delivery received");
    expect(delivery.headers["webhook-id"]).toBe("evt_g");
    expect(new Webhook(secret).verify(delivery.rawBody, delivery.headers)).toEqual({
      payload: 'héllo "there"',
      scheduledTime: scheduledTime.toISOString(),
    });
  });

  it("rejects a changed body, id or signature", () => {
    const secret = whsecSecret();
    const request = buildDeliveryRequest({
      webhookId: "evt_h",
      payload: "x",
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });
    const webhook = new Webhook(secret);

    expect(() => webhook.verify(request.body.replace('"x"', '"y"'), request.headers)).toThrow(WebhookVerificationError);
    expect(() => webhook.verify(request.body, { ...request.headers, "webhook-id": "evt_other" })).toThrow(
      WebhookVerificationError,
    );
    expect(() => new Webhook(whsecSecret()).verify(request.body, request.headers)).toThrow(WebhookVerificationError);
  });

  it("accepts a custom secret when the receiver gives standardwebhooks its UTF-8 bytes", () => {
    const secret = "my own sécret 🔑 with spaces";
    const request = buildDeliveryRequest({
      webhookId: "evt_i",
      payload: "x",
      scheduledTime,
      signingSecret: secret,
      now: new Date(),
    });
    const utf8 = Buffer.from(secret, "utf8");

    // Two ways a receiver can load raw key bytes: base64 of them, or a Uint8Array with format "raw".
    expect(new Webhook(utf8.toString("base64")).verify(request.body, request.headers)).toBeTruthy();
    expect(new Webhook(new Uint8Array(utf8), { format: "raw" }).verify(request.body, request.headers)).toBeTruthy();
    // The string form of format "raw" takes one byte per UTF-16 unit, which is not UTF-8 beyond ASCII.
    expect(() => new Webhook(secret, { format: "raw" }).verify(request.body, request.headers)).toThrow(
      WebhookVerificationError,
    );
  });

  it("treats a whsec_ secret whose rest is not base64 as a custom secret", () => {
    expect(standardWebhooksKey("whsec_not base64!")).toEqual(Buffer.from("whsec_not base64!", "utf8"));
    expect(standardWebhooksKey("whsec_")).toEqual(Buffer.from("whsec_", "utf8"));
    expect(standardWebhooksKey("whsec_AAEC/w==")).toEqual(Buffer.from([0, 1, 2, 255]));
  });
});

describe("a delivery during a signing-secret rotation's overlap", () => {
  const overlapRequest = (current: string, previous: string | null | undefined, now = new Date()) =>
    buildDeliveryRequest({
      webhookId: "evt_rot",
      payload: '{"rotated":true}',
      scheduledTime,
      signingSecret: current,
      previousSigningSecret: previous,
      now,
    });

  it("carries a webhook-signature for each secret, new first, and standardwebhooks accepts either", () => {
    const current = whsecSecret();
    const previous = whsecSecret();
    const now = new Date();
    const request = overlapRequest(current, previous, now);
    const entries = request.headers["webhook-signature"]?.split(" ") ?? [];

    expect(entries).toHaveLength(2);
    expect(entries.every((entry) => /^v1,[A-Za-z0-9+/]{43}=$/.test(entry))).toBe(true);
    expect(entries[0]).toBe(overlapRequest(current, null, now).headers["webhook-signature"]);
    expect(new Webhook(current).verify(request.body, request.headers)).toBeTruthy();
    expect(new Webhook(previous).verify(request.body, request.headers)).toBeTruthy();
    expect(() => new Webhook(whsecSecret()).verify(request.body, request.headers)).toThrow(WebhookVerificationError);
  });

  it("signs X-Jiter-Signature with the previous secret: @jiter/node accepts it under the old secret only", async () => {
    const current = whsecSecret();
    const previous = whsecSecret();

    const oldReceiver = await startJiterReceiver(previous);
    expect((await post(oldReceiver.url, overlapRequest(current, previous))).status).toBe(200);
    await expect.poll(() => oldReceiver.received[0]?.handled.length).toBe(1);

    const newReceiver = await startJiterReceiver(current);
    expect((await post(newReceiver.url, overlapRequest(current, previous))).status).toBe(401);
    expect(newReceiver.received[0]?.handled).toEqual([]);
  });

  it("signs with the current secret alone when there is no previous one, or it is the same", () => {
    const current = whsecSecret();
    const now = new Date();
    const alone = overlapRequest(current, undefined, now);
    for (const previous of [null, current]) {
      const request = overlapRequest(current, previous, now);
      expect(request.headers["webhook-signature"]).toBe(alone.headers["webhook-signature"]);
      expect(request.headers["X-Jiter-Signature"]).toBe(alone.headers["X-Jiter-Signature"]);
    }
  });
});
