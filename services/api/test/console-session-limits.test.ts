import { consoleSessionIndexKey, createRedis } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createProxiedTestContext } from "../../../test/support/client-addresses.ts";
import {
  createTestApiDeps,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { adminTokenDigest, MAX_SESSIONS_PER_CREDENTIAL } from "../src/console-session/session-store.ts";

// How much of Redis console sessions may hold: each API key, and the admin token, keeps only its
// newest sessions, every session and every index expires, and revoking or rotating a key through
// the admin API deletes its sessions at once.

const ADMIN_TOKEN = "sec-Bounded7Sessions3Kq";
const CAP = MAX_SESSIONS_PER_CREDENTIAL;

let context: TestContext;
let deps: ReturnType<typeof createTestApiDeps>["deps"];
let app: ReturnType<typeof createApp>;
let nextAddress = 1;
/** A client address no other request used: sign-ins are counted per address. */
const newAddress = () => `10.${Math.floor(nextAddress / 250)}.${nextAddress++ % 250}.1`;

beforeAll(async () => {
  context = await createProxiedTestContext({ ADMIN_TOKEN });
  deps = createTestApiDeps(context).deps;
  app = createApp(deps);
});
afterAll(() => context.close());

function sessionCookieOf(response: request.Response): string {
  const header = (response.headers["set-cookie"] as unknown as string[] | undefined) ?? [];
  const line = header.find((cookie) => cookie.startsWith("punctual_session="));
  if (!line) throw new Error(`no session cookie in ${JSON.stringify(response.headers)}`);
  return line.split(";")[0] ?? "";
}

async function signIn(apiKey: string, target = app): Promise<string> {
  const response = await request(target)
    .post("/console/api/session")
    .set("x-forwarded-for", newAddress())
    .send({ apiKey });
  expect(response.status).toBe(200);
  return sessionCookieOf(response);
}

async function signInOperator(): Promise<string> {
  const response = await request(app)
    .post("/console/api/operator-session")
    .set("x-forwarded-for", newAddress())
    .send({ adminToken: ADMIN_TOKEN });
  expect(response.status).toBe(200);
  return sessionCookieOf(response);
}

async function keyIdOf(org: TestOrganization): Promise<string> {
  return (await context.db.apiKey.findFirstOrThrow({ where: { orgId: org.orgId } })).id;
}

/** The session records stored in Redis, with their TTL. */
async function storedSessions(): Promise<{ key: string; record: Record<string, string>; ttl: number }[]> {
  const keys = await context.redis.keys(`${context.config.QUEUE_PREFIX}:console-session:*`);
  if (keys.length === 0) return [];
  const values = await context.redis.mget(...keys);
  const ttls = await Promise.all(keys.map((key) => context.redis.ttl(key)));
  return keys.flatMap((key, n) => {
    const value = values[n];
    return value ? [{ key, record: JSON.parse(value) as Record<string, string>, ttl: ttls[n] ?? -2 }] : [];
  });
}

const sessionsOfKey = async (apiKeyId: string) =>
  (await storedSessions()).filter(({ record }) => record.apiKeyId === apiKeyId);

const indexOf = (apiKeyId: string) => consoleSessionIndexKey(context.config.QUEUE_PREFIX, { apiKeyId });

const sessionStatus = async (cookie: string, target = app) =>
  (await request(target).get("/console/api/session").set("cookie", cookie)).status;

describe("the sessions of one API key", () => {
  it(`keeps only the newest ${CAP}: ${CAP + 11} sign-ins leave ${CAP}, and the oldest 11 no longer work`, async () => {
    const org = await createTestOrganization(context);
    const bystander = await createTestOrganization(context);
    const bystanderCookie = await signIn(bystander.apiKey);
    const keyId = await keyIdOf(org);

    const cookies: string[] = [];
    for (let n = 0; n < CAP + 11; n++) cookies.push(await signIn(org.apiKey));

    const stored = await sessionsOfKey(keyId);
    expect(stored).toHaveLength(CAP);
    expect(await context.redis.zcard(indexOf(keyId))).toBe(CAP);

    const evicted = cookies.slice(0, 11);
    const kept = cookies.slice(11);
    for (const cookie of evicted) {
      const events = await request(app).get("/api/events").set("cookie", cookie);
      expect({ status: events.status, body: events.body }).toEqual({
        status: 401,
        body: { message: "Not signed in" },
      });
    }
    for (const cookie of [kept[0], kept[kept.length - 1]] as string[]) {
      expect((await request(app).get("/api/events").set("cookie", cookie)).status).toBe(200);
    }
    // Another key's sessions are counted apart.
    expect(await sessionStatus(bystanderCookie)).toBe(200);
  });

  it(`holds ${CAP} after sign-ins at once through two APIs, each with its own Redis connection`, async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const redis = createRedis(context.config);
    try {
      const other = createApp({ ...deps, redis });
      await Promise.all(Array.from({ length: CAP + 11 }, (_, n) => signIn(org.apiKey, n % 2 === 0 ? app : other)));
      expect(await sessionsOfKey(keyId)).toHaveLength(CAP);
      expect(await context.redis.zcard(indexOf(keyId))).toBe(CAP);
    } finally {
      await redis.quit();
    }
  });

  it("gives every session and the key's index an expiry no later than CONSOLE_SESSION_TTL_SECONDS", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    await signIn(org.apiKey);
    await signIn(org.apiKey);
    const ttl = context.config.CONSOLE_SESSION_TTL_SECONDS;
    for (const { ttl: left } of await sessionsOfKey(keyId)) {
      expect(left).toBeGreaterThan(0);
      expect(left).toBeLessThanOrEqual(ttl);
    }
    const indexTtl = await context.redis.ttl(indexOf(keyId));
    expect(indexTtl).toBeGreaterThan(0);
    expect(indexTtl).toBeLessThanOrEqual(ttl);
  });

  it("lets the index go once its sessions have expired", async () => {
    const shortLived = createApp({ ...deps, config: { ...context.config, CONSOLE_SESSION_TTL_SECONDS: 1 } });
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    await signIn(org.apiKey, shortLived);
    await signIn(org.apiKey, shortLived);
    expect(await context.redis.zcard(indexOf(keyId))).toBe(2);
    await expect.poll(() => context.redis.exists(indexOf(keyId)), { timeout: 5_000, interval: 100 }).toBe(0);
    expect(await sessionsOfKey(keyId)).toEqual([]);
  });

  it("drops a signed-out session from the index", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const cookie = await signIn(org.apiKey);
    await signIn(org.apiKey);
    expect(await context.redis.zcard(indexOf(keyId))).toBe(2);
    expect((await request(app).delete("/console/api/session").set("cookie", cookie)).status).toBe(204);
    expect(await context.redis.zcard(indexOf(keyId))).toBe(1);
    expect(await sessionsOfKey(keyId)).toHaveLength(1);
  });
});

describe("the operator's sessions", () => {
  it(`keep only the newest ${CAP} per admin token`, async () => {
    const cookies: string[] = [];
    for (let n = 0; n < CAP + 1; n++) cookies.push(await signInOperator());
    const index = consoleSessionIndexKey(context.config.QUEUE_PREFIX, {
      adminTokenDigest: adminTokenDigest(ADMIN_TOKEN),
    });
    expect(await context.redis.zcard(index)).toBe(CAP);
    expect((await storedSessions()).filter(({ record }) => record.kind === "operator")).toHaveLength(CAP);
    const oldest = await request(app)
      .get("/api/admin/organizations")
      .set("cookie", cookies[0] as string);
    expect({ status: oldest.status, body: oldest.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
    expect(
      (
        await request(app)
          .get("/api/admin/organizations")
          .set("cookie", cookies[1] as string)
      ).status,
    ).toBe(200);
  });
});

describe("revoking or rotating a key through the admin API", () => {
  const admin = (path: string) =>
    request(app).post(path).set("authorization", `Bearer ${ADMIN_TOKEN}`).set("x-forwarded-for", newAddress());

  it("deletes the revoked key's sessions from Redis, so they answer 401 right after", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const cookies = [await signIn(org.apiKey), await signIn(org.apiKey)];
    expect(await sessionsOfKey(keyId)).toHaveLength(2);

    const revoked = await admin(`/api/admin/keys/${keyId}/revoke`).send({});
    expect(revoked.status).toBe(200);
    expect(await sessionsOfKey(keyId)).toEqual([]);
    expect(await context.redis.exists(indexOf(keyId))).toBe(0);
    for (const cookie of cookies) {
      const events = await request(app).get("/api/events").set("cookie", cookie);
      expect({ status: events.status, body: events.body }).toEqual({
        status: 401,
        body: { message: "Not signed in" },
      });
    }
  });

  it("deletes the rotated key's sessions, and leaves those of the organization's other keys", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const otherKey = await admin(`/api/admin/organizations/${org.orgId}/keys`).send({});
    expect(otherKey.status).toBe(201);
    const kept = await signIn(otherKey.body.apiKey);
    const cookie = await signIn(org.apiKey);

    const rotated = await admin(`/api/admin/keys/${keyId}/rotate`).send({});
    expect(rotated.status).toBe(200);
    expect(await sessionsOfKey(keyId)).toEqual([]);
    expect(await sessionStatus(cookie)).toBe(401);
    expect(await sessionStatus(kept)).toBe(200);
    expect(await sessionsOfKey(otherKey.body.keyId)).toHaveLength(1);
  });
});
