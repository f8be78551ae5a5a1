import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { systemClock } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { startLiveApi } from "../../../test/support/live-api.ts";

// A body without Content-Type was parsed as JSON. A browser sends such a body cross-site without
// a preflight (sendBeacon, or a no-cors fetch, with a Blob that has no type), so it is refused by
// its type (415) like a body of any other type; a request without a body needs no type at all.
// Raw node:http requests, so no client adds a header of its own.

const ADMIN_TOKEN = "adm_Jc5nW8qTz3Lm6Rv9Xb2Hk4";
const UNSUPPORTED = { status: 415, json: { message: "Content-Type must be application/json" } };

let context: TestContext;
let port: number;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN });
  ({ port } = await startLiveApi(context, systemClock));
  org = await createTestOrganization(context);
});
afterAll(() => context?.close());

interface Sent {
  method: string;
  path: string;
  headers?: Record<string, string>;
  /** Written with Content-Length unless `chunked`; none at all when absent (Node then sends
   * Content-Length: 0 for a POST, as fetch and axios do, and no length header for a DELETE). */
  body?: string;
  chunked?: boolean;
}

function send({ method, path, headers = {}, body, chunked }: Sent): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const call = httpRequest({ host: "127.0.0.1", port, method, path, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => {
        const text = Buffer.concat(chunks).toString();
        resolve({ status: response.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
      });
    });
    call.on("error", reject);
    if (body !== undefined) {
      if (chunked) call.setHeader("transfer-encoding", "chunked");
      else call.setHeader("content-length", String(Buffer.byteLength(body)));
    }
    call.end(body);
  });
}

/** A POST with neither Content-Length nor Transfer-Encoding, as `curl -X POST` without `-d` sends it. */
function postWithoutLength(path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const head = Object.entries({ host: `127.0.0.1:${port}`, connection: "close", ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("");
    // Written, not ended: the server answers, then closes the connection (Connection: close).
    socket.write(`POST ${path} HTTP/1.1\r\n${head}\r\n`);
    let answer = "";
    socket.on("data", (chunk: Buffer) => {
      answer += chunk.toString();
    });
    socket.on("end", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1])));
    socket.on("error", reject);
  });
}

const event = () =>
  JSON.stringify({
    payload: "{}",
    destination: "https://example.com/untyped",
    scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
  });

describe("a body without Content-Type", () => {
  it("is refused with 415 on an API route, and nothing is created", async () => {
    const before = await context.db.event.count();
    expect(
      await send({ method: "POST", path: "/api/events", headers: { "x-api-key": org.apiKey }, body: event() }),
    ).toEqual(UNSUPPORTED);
    expect(
      await send({
        method: "POST",
        path: "/api/events",
        headers: { "x-api-key": org.apiKey },
        body: event(),
        chunked: true,
      }),
    ).toEqual(UNSUPPORTED);
    expect(await context.db.event.count()).toBe(before);
  });

  it("is refused with 415 on the admin API and at the console's sign-in", async () => {
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const body = JSON.stringify({ email: "untyped@example.com" });
    expect(await send({ method: "POST", path: "/api/admin/accounts", headers: admin, body })).toEqual(UNSUPPORTED);
    expect(await context.db.account.count({ where: { email: "untyped@example.com" } })).toBe(0);
    const signIn = JSON.stringify({ apiKey: org.apiKey });
    expect(
      await send({
        method: "POST",
        path: "/console/api/session",
        headers: { origin: `http://127.0.0.1:${port}` },
        body: signIn,
      }),
    ).toEqual(UNSUPPORTED);
  });

  it("is still taken as JSON with the type, the SDK's way", async () => {
    const created = await send({
      method: "POST",
      path: "/api/events",
      headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
      body: event(),
    });
    expect(created.status).toBe(200);
  });
});

describe("a request without a body", () => {
  it("needs no Content-Type: a replay, a key rotation and a deletion without a body pass", async () => {
    const created = await send({
      method: "POST",
      path: "/api/events",
      headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
      body: event(),
    });
    const id = (created.json as { id: string }).id;
    await context.db.$executeRaw`UPDATE events SET status = 'Sent', sent_at = now() WHERE id = ${id}`;
    // Without any length header (curl -X POST) and with Content-Length: 0 (fetch, axios).
    expect(await postWithoutLength(`/api/events/${id}/replay`, { "x-api-key": org.apiKey })).toBe(200);
    const emptyBody = await send({
      method: "POST",
      path: `/api/events/${id}/replay`,
      headers: { "x-api-key": org.apiKey },
    });
    expect(emptyBody.status).toBe(200);

    // Another organization's key: this one's is used below.
    const other = await createTestOrganization(context);
    const { id: keyId } = await context.db.apiKey.findFirstOrThrow({ where: { orgId: other.orgId } });
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    expect((await send({ method: "POST", path: `/api/admin/keys/${keyId}/rotate`, headers: admin })).status).toBe(200);

    const cron = await send({
      method: "POST",
      path: "/api/cronjobs",
      headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ expression: "0 * * * *", destination: "https://example.com/untyped", payload: "{}" }),
    });
    expect(cron.status).toBe(200);
    const cronId = (cron.json as { id: string }).id;
    expect(
      (await send({ method: "DELETE", path: `/api/cronjobs/${cronId}`, headers: { "x-api-key": org.apiKey } })).status,
    ).toBe(204);
  });
});
