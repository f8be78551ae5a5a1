import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createSender, type Sender, type SenderOptions } from "./send.ts";

interface SeenRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Date.now() when the whole body had arrived. */
  arrivedAt: number;
}

interface Receiver {
  /** Base URL on 127.0.0.1, e.g. `http://127.0.0.1:41234`. */
  origin: string;
  port: number;
  requests: SeenRequest[];
  connections: () => number;
  /** Requests whose headers have arrived, complete or not. */
  requestsStarted: () => number;
  closedConnections: () => number;
  /** Closes every open connection, keeping the server listening. */
  dropConnections(): void;
  close(): Promise<void>;
}

type Handler = (request: IncomingMessage, response: ServerResponse, seen: SeenRequest) => void;

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real HTTP receiver on loopback that records every request and counts TCP connections. */
async function startReceiver(handler: Handler): Promise<Receiver> {
  const requests: SeenRequest[] = [];
  let connections = 0;
  let requestsStarted = 0;
  let closedConnections = 0;
  const server = createServer((request, response) => {
    requestsStarted += 1;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const seen = {
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: Buffer.concat(chunks),
        arrivedAt: Date.now(),
      };
      requests.push(seen);
      handler(request, response, seen);
    });
  });
  server.on("connection", (socket) => {
    connections += 1;
    socket.on("close", () => {
      closedConnections += 1;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: Receiver = {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    connections: () => connections,
    requestsStarted: () => requestsStarted,
    closedConnections: () => closedConnections,
    dropConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  cleanups.push(() => receiver.close());
  return receiver;
}

function sender(options: Partial<SenderOptions> = {}): Sender {
  const created = createSender({ timeoutMs: 5_000, allowPrivateDestinations: true, ...options });
  cleanups.push(() => created.close());
  return created;
}

const answer =
  (status: number, body = "", headers: Record<string, string> = {}): Handler =>
  (_request, response) => {
    response.writeHead(status, headers);
    response.end(body);
  };

const jsonRequest = (url: string) => ({
  url,
  body: '{"payload":"x","scheduledTime":"2030-01-01T00:00:00.000Z"}',
  headers: { "Content-Type": "application/json" },
});

describe("createSender", () => {
  it("POSTs the body bytes and headers exactly as given", async () => {
    const receiver = await startReceiver(answer(200));
    const body = JSON.stringify({
      payload: 'Grüße "quoted" 日本語 🚀 \u2028',
      scheduledTime: "2030-01-01T00:00:00.000Z",
    });
    const headers = {
      "Content-Type": "application/json",
      "User-Agent": "Punctual/0.1.0",
      "X-Jiter-Request-Timestamp": "1893456000000",
      "X-Jiter-Signature": "c2lnbmF0dXJl+/=",
      "webhook-id": "evt_01jabc",
      "webhook-timestamp": "1893456000",
      "webhook-signature": "v1,abc+/=",
    };

    const outcome = await sender().send({ url: `${receiver.origin}/hooks/in?x=1`, body, headers });

    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, responseBody: "", error: null });
    const [seen] = receiver.requests;
    expect(seen?.method).toBe("POST");
    expect(seen?.url).toBe("/hooks/in?x=1");
    expect(seen?.body.equals(Buffer.from(body, "utf8"))).toBe(true);
    expect(seen?.headers["content-length"]).toBe(String(Buffer.byteLength(body, "utf8")));
    for (const [name, value] of Object.entries(headers)) expect(seen?.headers[name.toLowerCase()]).toBe(value);
  });

  it("counts a 2xx as success and keeps the first 1024 bytes of the answer", async () => {
    const receiver = await startReceiver(answer(200, "a".repeat(5000)));

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, error: null });
    expect(outcome.responseBody).toBe("a".repeat(1024));
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
  });

  it("cuts the kept answer on a character boundary, never past 1024 bytes", async () => {
    const receiver = await startReceiver(answer(200, `a${"é".repeat(600)}`));

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome.responseBody).toBe(`a${"é".repeat(511)}`);
    expect(Buffer.byteLength(outcome.responseBody ?? "", "utf8")).toBe(1023);
  });

  it("stays within 1024 bytes when the answer is not valid UTF-8", async () => {
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/octet-stream" });
      response.end(Buffer.alloc(4000, 0xff));
    });

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome.ok).toBe(true);
    expect(Buffer.byteLength(outcome.responseBody ?? "", "utf8")).toBeLessThanOrEqual(1024);
  });

  it("stops reading a huge answer instead of downloading it all", async () => {
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200, { "Content-Type": "text/plain" });
      // 64 MiB in 1 MiB chunks, written only as fast as the client reads.
      let left = 64;
      const chunk = Buffer.alloc(1024 * 1024, "b");
      const write = () => {
        while (left > 0) {
          left -= 1;
          if (!response.write(chunk)) {
            response.once("drain", write);
            return;
          }
        }
        response.end();
      };
      write();
    });

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, responseBody: "b".repeat(1024), error: null });
  });

  it("counts a 2xx whose body breaks off as an answer", async () => {
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200, { "Content-Length": "100" });
      response.write("partial", () => response.socket?.destroy());
    });

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, responseBody: "partial", error: null });
  });

  it("fails on a 500 and keeps what the receiver said", async () => {
    const receiver = await startReceiver(answer(500, "boom"));

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: 500,
      responseBody: "boom",
      error: "Receiver answered 500",
    });
  });

  it("fails on a 404 without throwing", async () => {
    const receiver = await startReceiver(answer(404));

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({ ok: false, responseStatus: 404, responseBody: "", error: "Receiver answered 404" });
  });

  it("does not follow a redirect and counts it as a failure", async () => {
    const target = await startReceiver(answer(200));
    const receiver = await startReceiver(answer(302, "moved", { Location: `${target.origin}/elsewhere` }));

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: 302,
      responseBody: "moved",
      error: "Redirects are not followed (302)",
    });
    expect(receiver.requests).toHaveLength(1);
    expect(target.requests).toHaveLength(0);
    expect(target.connections()).toBe(0);
  });

  it("gives up after the timeout when the receiver never answers", async () => {
    const receiver = await startReceiver(() => {
      // Never answer: the request just hangs.
    });

    const outcome = await sender({ timeoutMs: 300 }).send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: null,
      responseBody: null,
      error: "Timed out after 300 ms",
    });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(290);
    expect(outcome.durationMs).toBeLessThan(3_000);
    expect(receiver.requests).toHaveLength(1);
  });

  it("reports a connection the receiver resets", async () => {
    const receiver = await startReceiver((request) => {
      request.socket.destroy();
    });

    const outcome = await sender().send(jsonRequest(`${receiver.origin}/`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: null,
      responseBody: null,
      error: "ECONNRESET: socket hang up",
    });
  });

  it("reports a refused connection", async () => {
    const receiver = await startReceiver(answer(200));
    const url = `${receiver.origin}/`;
    await receiver.close();

    const outcome = await sender().send(jsonRequest(url));

    expect(outcome).toMatchObject({ ok: false, responseStatus: null, responseBody: null });
    expect(outcome.error).toMatch(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/);
  });

  it.each([
    ["127.0.0.1", (port: number) => `http://127.0.0.1:${port}/`],
    ["127.0.0.1 in hex", (port: number) => `http://0x7f000001:${port}/`],
    ["::ffff:127.0.0.1", (port: number) => `http://[::ffff:127.0.0.1]:${port}/`],
    ["localhost, via the guarded lookup", (port: number) => `http://localhost:${port}/`],
  ])("refuses a private destination (%s) unless allowed", async (_name, urlFor) => {
    const receiver = await startReceiver(answer(200));
    const url = urlFor(receiver.port);

    const refused = await sender({ allowPrivateDestinations: false }).send(jsonRequest(url));

    expect(refused).toMatchObject({
      ok: false,
      responseStatus: null,
      responseBody: null,
      error: "Destination address is not allowed",
    });
    expect(receiver.connections()).toBe(0);

    const allowed = await sender({ allowPrivateDestinations: true }).send(jsonRequest(url));
    expect(allowed).toMatchObject({ ok: true, responseStatus: 200 });
  });

  it.each(["localhost", "127.0.0.1"])("refuses https://%s too, before any connection", async (host) => {
    const receiver = await startReceiver(answer(200));

    const outcome = await sender({ allowPrivateDestinations: false }).send(
      jsonRequest(`https://${host}:${receiver.port}/`),
    );

    expect(outcome).toMatchObject({ ok: false, responseStatus: null, error: "Destination address is not allowed" });
    expect(receiver.connections()).toBe(0);
  });

  it("refuses a destination that is not an http or https URL", async () => {
    const outcome = await sender().send(jsonRequest("ftp://example.com/"));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: null,
      error: "Destination must be an http or https URL",
    });
  });

  it("reuses one keep-alive connection for sequential sends", async () => {
    const receiver = await startReceiver(answer(200, "ok"));
    const client = sender();

    for (let i = 0; i < 20; i += 1) {
      const outcome = await client.send(jsonRequest(`${receiver.origin}/${i}`));
      expect(outcome.ok).toBe(true);
    }

    expect(receiver.requests).toHaveLength(20);
    expect(receiver.connections()).toBe(1);
  });

  it("closes its pooled connections on close()", async () => {
    const receiver = await startReceiver(answer(200, "ok"));
    const client = createSender({ timeoutMs: 5_000, allowPrivateDestinations: true });
    expect((await client.send(jsonRequest(`${receiver.origin}/`))).ok).toBe(true);
    expect(receiver.closedConnections()).toBe(0);

    client.close();

    await expect.poll(() => receiver.closedConnections()).toBe(1);
  });
});

describe("sendAfter", () => {
  it("connects ahead and writes the request at its instant, not before", async () => {
    const receiver = await startReceiver(answer(200, "ok"));
    const instant = Date.now() + 400;

    const pending = sender({ maxHeld: 10 }).sendAfter(jsonRequest(`${receiver.origin}/`), instant - Date.now());

    // The connection is made during the wait; the request itself is not on it yet.
    await expect.poll(() => receiver.connections()).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(receiver.requestsStarted()).toBe(0);
    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, responseBody: "ok" });
    expect(outcome.startedAt.getTime()).toBeGreaterThanOrEqual(instant);
    expect(receiver.requests[0]?.arrivedAt).toBeGreaterThanOrEqual(instant);
    expect(receiver.requests[0]?.body.toString()).toBe(jsonRequest("").body);
  });

  it("holds a burst for one instant on as many connections and sends it all then", async () => {
    // Answers nothing until all 100 have arrived: held requests must not wait for each other.
    const waiting: ServerResponse[] = [];
    const receiver = await startReceiver((_request, response) => {
      waiting.push(response);
      if (waiting.length === 100) for (const each of waiting) each.end();
    });
    const client = sender({ maxHeld: 100, maxConcurrent: 5 });
    const instant = Date.now() + 500;

    const outcomes = Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        client.sendAfter(jsonRequest(`${receiver.origin}/${i}`), instant - Date.now()),
      ),
    );

    await expect.poll(() => receiver.connections()).toBe(100);
    expect(receiver.requestsStarted()).toBe(0);
    expect((await outcomes).every((outcome) => outcome.ok)).toBe(true);
    expect(receiver.requests).toHaveLength(100);
    expect(Math.min(...receiver.requests.map((seen) => seen.arrivedAt))).toBeGreaterThanOrEqual(instant);
    expect(receiver.connections()).toBe(100);
  });

  it("holds no more than maxHeld; the rest wait for the instant and go out within the in-flight limit", async () => {
    const receiver = await startReceiver(answer(200));
    const client = sender({ maxHeld: 3, maxConcurrent: 2 });
    const instant = Date.now() + 400;

    const outcomes = Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        client.sendAfter(jsonRequest(`${receiver.origin}/${i}`), instant - Date.now()),
      ),
    );

    await expect.poll(() => receiver.connections()).toBe(3);
    expect((await outcomes).every((outcome) => outcome.ok)).toBe(true);
    expect(receiver.requests).toHaveLength(8);
    expect(Math.min(...receiver.requests.map((seen) => seen.arrivedAt))).toBeGreaterThanOrEqual(instant);
    // 3 held connections plus at most 2 more for the requests sent the plain way.
    expect(receiver.connections()).toBeLessThanOrEqual(5);
  });

  it("makes no connection ahead when holding is off", async () => {
    const receiver = await startReceiver(answer(200));
    const instant = Date.now() + 300;

    const pending = sender({ maxHeld: 0 }).sendAfter(jsonRequest(`${receiver.origin}/`), instant - Date.now());
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(receiver.connections()).toBe(0);

    expect(await pending).toMatchObject({ ok: true, responseStatus: 200 });
    expect(receiver.requests[0]?.arrivedAt).toBeGreaterThanOrEqual(instant);
  });

  it("starts afresh at the instant when the held connection breaks before it", async () => {
    const receiver = await startReceiver(answer(200, "fresh"));
    const instant = Date.now() + 500;

    const pending = sender({ maxHeld: 10 }).sendAfter(jsonRequest(`${receiver.origin}/`), instant - Date.now());
    await expect.poll(() => receiver.connections()).toBe(1);
    // The receiver drops the idle connection (as a server does after its keep-alive timeout).
    receiver.dropConnections();

    const outcome = await pending;
    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, responseBody: "fresh" });
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.arrivedAt).toBeGreaterThanOrEqual(instant);
    expect(receiver.connections()).toBe(2);
  });

  it("counts the timeout from the instant, not from when the request was opened", async () => {
    const receiver = await startReceiver((_request, response) => {
      setTimeout(() => {
        response.writeHead(200);
        response.end("late but in time");
      }, 200);
    });
    const client = sender({ maxHeld: 10, timeoutMs: 400 });

    const outcome = await client.sendAfter(jsonRequest(`${receiver.origin}/`), 600);

    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, responseBody: "late but in time" });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(190);
    expect(outcome.durationMs).toBeLessThan(400);
  });

  it("refuses a forbidden destination at its instant without connecting", async () => {
    const receiver = await startReceiver(answer(200));
    const instant = Date.now() + 200;

    const outcome = await sender({ maxHeld: 10, allowPrivateDestinations: false }).sendAfter(
      jsonRequest(`http://127.0.0.1:${receiver.port}/`),
      instant - Date.now(),
    );

    expect(outcome).toMatchObject({ ok: false, responseStatus: null, error: "Destination address is not allowed" });
    expect(outcome.startedAt.getTime()).toBeGreaterThanOrEqual(instant);
    expect(receiver.connections()).toBe(0);
  });
});
