import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createPunctualClient, PunctualError } from "../../packages/client/src/index.ts";

// How the client sends a request again after 429 Too Many Requests, against a loopback server whose
// answers each test scripts: how many tries, how long between them, and when it gives up. (The same
// against Punctual's own rate limiter is in rate-limit.test.ts.)

interface Seen {
  at: number;
  method: string;
  body: string;
  idempotencyKey: string | undefined;
}

let server: Server;
let baseUrl: string;
let seen: Seen[];
/** Answers the n-th request (0-based) of the current test. */
let answer: (n: number, res: ServerResponse) => void;

const tooMany = (res: ServerResponse, retryAfter?: string) => {
  res.writeHead(429, {
    "content-type": "application/json",
    ...(retryAfter === undefined ? {} : { "retry-after": retryAfter }),
  });
  res.end(JSON.stringify({ message: "Too many requests, please try again later" }));
};
const event = (res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ id: "evt_01kaaaaaaaaaaaaaaaaaaaaaaa", status: "Pending" }));
};

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const header = req.headers["idempotency-key"];
      seen.push({
        at: Date.now(),
        method: req.method ?? "",
        body: Buffer.concat(chunks).toString("utf8"),
        idempotencyKey: typeof header === "string" ? header : undefined,
      });
      answer(seen.length - 1, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});
beforeEach(() => {
  seen = [];
});

const BODY = { payload: "{}", destination: "https://example.com/hook", scheduledTime: "2030-01-01T00:00:00.000Z" };

describe("retries after 429", () => {
  it("sends the request again, body and Idempotency-Key included, after the Retry-After seconds", async () => {
    answer = (n, res) => (n === 0 ? tooMany(res, "1") : event(res));
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test" });

    const created = await client.events.create(BODY, { idempotencyKey: "order-42" });

    expect(created.id).toBe("evt_01kaaaaaaaaaaaaaaaaaaaaaaa");
    expect(seen).toHaveLength(2);
    expect(seen[1]?.body).toBe(seen[0]?.body);
    expect(JSON.parse(seen[1]?.body ?? "")).toEqual(BODY);
    expect(seen.map((request) => request.idempotencyKey)).toEqual(["order-42", "order-42"]);
    // Timer granularity aside, the second try waited the whole second.
    expect((seen[1]?.at ?? 0) - (seen[0]?.at ?? 0)).toBeGreaterThanOrEqual(990);
  });

  it("reads Retry-After as an HTTP date too", async () => {
    // Whole seconds, as the header carries them: at least one second ahead.
    const retryAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 1000);
    answer = (n, res) => (n === 0 ? tooMany(res, retryAt.toUTCString()) : event(res));
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test" });

    await client.events.get("evt_01kaaaaaaaaaaaaaaaaaaaaaaa");

    expect(seen).toHaveLength(2);
    expect(seen[1]?.at ?? 0).toBeGreaterThanOrEqual(retryAt.getTime() - 10);
  });

  it("gives up after `retries` retries and throws the last 429 with its Retry-After", async () => {
    answer = (_n, res) => tooMany(res, "0");
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test", retry: { retries: 3 } });

    const error = await client.events.get("evt_01kaaaaaaaaaaaaaaaaaaaaaaa").catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PunctualError);
    expect(error).toMatchObject({
      status: 429,
      message: "Too many requests, please try again later",
      operation: "getEvent",
      retryAfterSeconds: 0,
    });
    expect(seen).toHaveLength(4);
  });

  it("does not wait for a Retry-After longer than maxDelayMs: the 429 is thrown at once", async () => {
    answer = (_n, res) => tooMany(res, "60");
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test", retry: { retries: 5, maxDelayMs: 1_000 } });
    const started = Date.now();

    const error = await client.events.get("evt_01kaaaaaaaaaaaaaaaaaaaaaaa").catch((thrown: unknown) => thrown);

    expect(error).toMatchObject({ status: 429, retryAfterSeconds: 60 });
    expect(seen).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("does not retry a 429 that says nothing of when to come back", async () => {
    answer = (n, res) => (n === 0 ? tooMany(res) : event(res));
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test" });

    const error = await client.events.get("evt_01kaaaaaaaaaaaaaaaaaaaaaaa").catch((thrown: unknown) => thrown);

    expect(error).toMatchObject({ status: 429, retryAfterSeconds: undefined });
    expect(seen).toHaveLength(1);
  });

  it("with retry: false, sends once and throws the 429", async () => {
    answer = (n, res) => (n === 0 ? tooMany(res, "0") : event(res));
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test", retry: false });

    const error = await client.events.create(BODY).catch((thrown: unknown) => thrown);

    expect(error).toMatchObject({ status: 429, operation: "createEvent" });
    expect(seen).toHaveLength(1);
  });

  it("retries nothing but 429: a 503 with Retry-After is thrown at once", async () => {
    answer = (n, res) => {
      if (n > 0) return event(res);
      res.writeHead(503, { "content-type": "application/json", "retry-after": "0" });
      res.end(JSON.stringify({ message: "Redis did not answer" }));
    };
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test" });

    const error = await client.events.get("evt_01kaaaaaaaaaaaaaaaaaaaaaaa").catch((thrown: unknown) => thrown);

    expect(error).toMatchObject({ status: 503, message: "Redis did not answer", retryAfterSeconds: 0 });
    expect(seen).toHaveLength(1);
  });

  it("stops waiting when the call's signal is aborted, with the abort's reason", async () => {
    answer = (n, res) => (n === 0 ? tooMany(res, "30") : event(res));
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test" });
    const controller = new AbortController();

    const call = client.events.get("evt_01kaaaaaaaaaaaaaaaaaaaaaaa", { signal: controller.signal });
    await expect.poll(() => seen.length).toBe(1);
    const started = Date.now();
    controller.abort(new Error("shutting down"));

    await expect(call).rejects.toThrow("shutting down");
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(seen).toHaveLength(1);
  });

  it("refuses settings that cannot bound the retries", () => {
    expect(() => createPunctualClient({ baseUrl, apiKey: "k", retry: { retries: -1 } })).toThrow(RangeError);
    expect(() => createPunctualClient({ baseUrl, apiKey: "k", retry: { retries: 1.5 } })).toThrow(RangeError);
    expect(() => createPunctualClient({ baseUrl, apiKey: "k", retry: { maxDelayMs: Number.NaN } })).toThrow(RangeError);
  });
});

describe("PunctualError", () => {
  it("carries the status and the status text when the answer is not Punctual's JSON (a proxy's page)", async () => {
    answer = (_n, res) => {
      res.writeHead(502, "Bad Gateway", { "content-type": "text/html" });
      res.end("<html><body>upstream unavailable</body></html>");
    };
    const client = createPunctualClient({ baseUrl, apiKey: "pk_test" });

    const error = await client.cronJobs.list().catch((thrown: unknown) => thrown);

    expect(error).toBeInstanceOf(PunctualError);
    expect(error).toMatchObject({
      name: "PunctualError",
      status: 502,
      message: "502 Bad Gateway",
      operation: "getManyCronJobs",
      body: "<html><body>upstream unavailable</body></html>",
    });
  });
});
