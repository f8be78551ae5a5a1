import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { FORBIDDEN_DESTINATION_MESSAGE } from "@punctual/core";
import { afterEach, describe, expect, it } from "vitest";
import { createHttpTransport } from "./http-transport.ts";
import { RESPONSE_BODY_LIMIT, RESPONSE_READ_LIMIT, type Transport, type TransportOptions } from "./transport.ts";

interface SeenRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

interface Receiver {
  origin: string;
  port: number;
  requests: SeenRequest[];
  /** TCP connections accepted so far. */
  connections: () => number;
  /** TCP connections closed so far. */
  closed: () => number;
}

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A real HTTP server on 127.0.0.1 that records each request once its body has arrived. */
async function startReceiver(handler: Handler = (_request, response) => response.end("ok")): Promise<Receiver> {
  const requests: SeenRequest[] = [];
  let connections = 0;
  let closed = 0;
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      requests.push({
        method: request.method,
        url: request.url,
        headers: request.headers,
        body: Buffer.concat(chunks),
      });
      handler(request, response);
    });
  });
  server.on("connection", (socket) => {
    connections += 1;
    socket.on("close", () => {
      closed += 1;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { origin: `http://127.0.0.1:${port}`, port, requests, connections: () => connections, closed: () => closed };
}

/** A transport with test defaults, closed after the test. */
function transport(options: Partial<TransportOptions> = {}): Transport {
  const created = createHttpTransport({
    timeoutMs: 5_000,
    allowPrivateDestinations: true,
    connectionsPerOrigin: 16,
    ...options,
  });
  // First in the list, so closed last: once the receivers are gone nothing in flight waits on them.
  cleanups.unshift(() => created.close());
  return created;
}

const HEADERS = {
  "content-type": "application/json",
  "webhook-id": "msg_1",
  "webhook-timestamp": "1700000000",
  "webhook-signature": "v1,c2lnbmF0dXJl",
};
const post = (url: string, body = '{"payload":"{}"}') => ({ url, body, headers: HEADERS });

describe("createHttpTransport", () => {
  it("sends one POST with exactly the given headers and body, Content-Length set, no Accept-Encoding", async () => {
    const receiver = await startReceiver();
    const body = JSON.stringify({ payload: "héllo €", scheduledTime: "2030-01-01T00:00:00.000Z" });
    const before = Date.now();
    const outcome = await transport().send(post(`${receiver.origin}/hook/a?b=1`, body));

    expect(outcome).toMatchObject({
      ok: true,
      responseStatus: 200,
      responseBody: "ok",
      error: null,
      kind: "answered",
    });
    expect(outcome.startedAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(outcome.durationMs).toBeGreaterThanOrEqual(0);
    expect(receiver.requests).toHaveLength(1);
    const [seen] = receiver.requests;
    expect(seen?.method).toBe("POST");
    expect(seen?.url).toBe("/hook/a?b=1");
    expect(seen?.body.toString("utf8")).toBe(body);
    expect(seen?.headers).toMatchObject({ ...HEADERS, "content-length": String(Buffer.byteLength(body)) });
    expect(seen?.headers).not.toHaveProperty("accept-encoding");
    expect(seen?.headers).not.toHaveProperty("transfer-encoding");
  });

  it("does not follow a redirect and records it as a failure", async () => {
    const receiver = await startReceiver((request, response) => {
      if (request.url === "/hook") response.writeHead(302, { location: "/elsewhere" }).end("moved");
      else response.end("followed");
    });
    const outcome = await transport().send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: 302,
      responseBody: "moved",
      error: "Redirects are not followed (302)",
      kind: "answered",
    });
    expect(receiver.requests.map((r) => r.url)).toEqual(["/hook"]);
  });

  it("records a non-2xx status with the receiver's body", async () => {
    const receiver = await startReceiver((_request, response) => response.writeHead(500).end("boom"));
    const outcome = await transport().send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: 500,
      responseBody: "boom",
      error: "Receiver answered 500",
      kind: "answered",
    });
  });

  it("times out a receiver that never answers, after the limit", async () => {
    const receiver = await startReceiver(() => {});
    const outcome = await transport({ timeoutMs: 300 }).send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: null,
      responseBody: null,
      error: "Timed out after 300 ms",
      kind: "timeout",
    });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(295);
    expect(outcome.durationMs).toBeLessThan(1_000);
    // The timed-out request is abandoned (its connection closed), and never sent again.
    await expect.poll(() => receiver.closed()).toBeGreaterThanOrEqual(1);
    expect(receiver.requests).toHaveLength(1);
  });

  it("judges by the status once it arrived, even when the body runs past the limit", async () => {
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200);
      response.write("first part ");
      setTimeout(() => response.end("late part"), 1_000);
    });
    const outcome = await transport({ timeoutMs: 300 }).send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({
      ok: true,
      responseStatus: 200,
      responseBody: "first part ",
      error: null,
      kind: "answered",
    });
    expect(outcome.durationMs).toBeGreaterThanOrEqual(295);
    expect(outcome.durationMs).toBeLessThan(1_000);
  });

  it("judges by the status once it arrived, even when the body breaks off", async () => {
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(201, { "content-length": "100" });
      response.write("partial", () => setTimeout(() => response.socket?.destroy(), 20));
    });
    const outcome = await transport().send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({ ok: true, responseStatus: 201, responseBody: "partial", kind: "answered" });
  });

  it("reads at most 64 KiB of a large body and keeps 1024 bytes cut on a character boundary, without NUL", async () => {
    // Bytes 0–1021: NUL and 1021 × "a"; "€" (3 bytes) spans bytes 1022–1024, across the 1024 cut.
    const head = `\u0000${"a".repeat(RESPONSE_BODY_LIMIT - 3)}€`;
    const body = Buffer.concat([Buffer.from(head), Buffer.alloc(1_000_000 - Buffer.byteLength(head), "b")]);
    let written = 0;
    const receiver = await startReceiver((_request, response) => {
      response.writeHead(200, { "content-length": String(body.length) });
      // Paced pieces (the whole megabyte takes 300 ms): the client hangs up long before the end.
      const writeFrom = (offset: number) => {
        if (offset >= body.length || response.destroyed) return;
        const piece = body.subarray(offset, offset + 16 * 1024);
        response.write(piece, (error) => {
          if (error) return;
          written += piece.length;
          setTimeout(() => writeFrom(offset + piece.length), 5);
        });
      };
      writeFrom(0);
    });
    const outcome = await transport().send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({ ok: true, responseStatus: 200, kind: "answered" });
    expect(outcome.responseBody).toBe("a".repeat(RESPONSE_BODY_LIMIT - 3));
    // The client dropped the connection after 64 KiB instead of reading the megabyte.
    await expect.poll(() => receiver.closed()).toBeGreaterThanOrEqual(1);
    expect(written).toBeLessThan(body.length / 2);
    expect(written).toBeGreaterThanOrEqual(RESPONSE_READ_LIMIT);
  });

  it("records a refused connection as refused", async () => {
    const receiver = await startReceiver();
    const url = `${receiver.origin}/hook`;
    // Close the server so nothing listens on its port any more.
    await cleanups.pop()?.();
    const outcome = await transport().send(post(url));

    expect(outcome).toMatchObject({ ok: false, responseStatus: null, responseBody: null, kind: "refused" });
    expect(outcome.error).toContain("ECONNREFUSED");
  });

  it("records a connection closed before any status as refused", async () => {
    const receiver = await startReceiver((request) => request.socket.destroy());
    const outcome = await transport().send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({ ok: false, responseStatus: null, kind: "refused" });
    expect(outcome.error).not.toBeNull();
  });

  it("refuses a name that resolves to a private address when private destinations are not allowed", async () => {
    const receiver = await startReceiver();
    const outcome = await transport({ allowPrivateDestinations: false }).send(
      post(`http://localhost:${receiver.port}/hook`),
    );

    expect(outcome).toMatchObject({
      ok: false,
      responseStatus: null,
      error: FORBIDDEN_DESTINATION_MESSAGE,
      kind: "refused",
    });
    expect(receiver.connections()).toBe(0);
  });

  it("refuses a private IP literal when private destinations are not allowed", async () => {
    const receiver = await startReceiver();
    const outcome = await transport({ allowPrivateDestinations: false }).send(post(`${receiver.origin}/hook`));

    expect(outcome).toMatchObject({ ok: false, error: FORBIDDEN_DESTINATION_MESSAGE, kind: "refused", durationMs: 0 });
    expect(receiver.connections()).toBe(0);
  });

  it("records an unresolvable name with the same text as a forbidden one", async () => {
    const outcome = await transport().send(post("http://no-such-host.invalid/hook"));

    expect(outcome).toMatchObject({ ok: false, error: FORBIDDEN_DESTINATION_MESSAGE, kind: "refused" });
  });

  it("refuses a destination that is not an http(s) URL without sending", async () => {
    const outcome = await transport().send(post("ftp://example.com/hook"));

    expect(outcome).toMatchObject({ ok: false, responseStatus: null, kind: "refused" });
    expect(outcome.error).toMatch(/http or https URL/);
  });

  it("reuses one keep-alive connection for sequential requests", async () => {
    const receiver = await startReceiver();
    const client = transport();
    for (let i = 0; i < 20; i++) {
      expect((await client.send(post(`${receiver.origin}/hook`))).ok).toBe(true);
      // undici waits one event-loop turn before reusing a connection (in case the receiver closes
      // it after all); a request sent within that turn would open a second one.
      await new Promise((resolve) => setImmediate(resolve));
    }

    expect(receiver.requests).toHaveLength(20);
    expect(receiver.connections()).toBe(1);
  });

  it("opens connections ahead, and the requests sent once it resolves go out on them without connecting again", async () => {
    const receiver = await startReceiver();
    const client = transport();
    // Resolved only once they are open: requests sent before would have connected anew (6 in all).
    await client.preconnect(receiver.origin, 3);
    expect(receiver.requests).toHaveLength(0);

    const outcomes = await Promise.all(Array.from({ length: 3 }, () => client.send(post(`${receiver.origin}/hook`))));
    expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
    expect(receiver.connections()).toBe(3);
  });

  it("counts the connections already open when opening ahead: no more than asked for in all", async () => {
    const receiver = await startReceiver();
    const client = transport();
    expect((await client.send(post(`${receiver.origin}/hook`))).ok).toBe(true);
    expect(receiver.connections()).toBe(1);
    client.preconnect(receiver.origin, 3);
    await expect.poll(() => receiver.connections()).toBe(3);
    client.preconnect(receiver.origin, 3);
    // A request answered afterwards: anything the second call opened would have connected by then.
    await new Promise((resolve) => setImmediate(resolve));
    expect((await client.send(post(`${receiver.origin}/hook`))).ok).toBe(true);
    expect(receiver.connections()).toBe(3);
  });

  it("opens no connection ahead to a destination it may not send to", async () => {
    const receiver = await startReceiver();
    const guarded = transport({ allowPrivateDestinations: false });
    guarded.preconnect(receiver.origin, 3);
    // Another transport's request, answered after anything the call above could have opened.
    expect((await transport().send(post(`${receiver.origin}/hook`))).ok).toBe(true);
    expect(receiver.connections()).toBe(1);
  });

  it("opens at most connectionsPerOrigin connections to one origin", async () => {
    const receiver = await startReceiver((_request, response) => setTimeout(() => response.end("ok"), 5));
    const client = transport({ connectionsPerOrigin: 8 });
    const outcomes = await Promise.all(Array.from({ length: 200 }, () => client.send(post(`${receiver.origin}/hook`))));

    expect(outcomes.filter((o) => o.ok)).toHaveLength(200);
    expect(receiver.connections()).toBeLessThanOrEqual(8);
    expect(receiver.connections()).toBeGreaterThan(1);
  });

  it("does not hold up other origins behind a receiver that hangs", async () => {
    const hanging = await startReceiver(() => {});
    const healthy = await startReceiver();
    const client = transport({ connectionsPerOrigin: 4, timeoutMs: 10_000 });
    const stuck = Array.from({ length: 20 }, () => client.send(post(`${hanging.origin}/hook`)));
    await expect.poll(() => hanging.requests.length).toBe(4);

    const outcome = await client.send(post(`${healthy.origin}/hook`));
    expect(outcome).toMatchObject({ ok: true, kind: "answered" });
    expect(outcome.durationMs).toBeLessThan(1_000);
    // Still waiting: the hanging receiver's attempts are not finished.
    const settled = await Promise.race([
      Promise.all(stuck).then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 50)),
    ]);
    expect(settled).toBe(false);
  });
});
