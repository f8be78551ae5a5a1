import { revokeApiKey } from "@punctual/core";
import { createDb } from "@punctual/db";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;
const ADMIN_TOKEN = "fd-Vb8nR3yKq6Wt2Lx9Jh";

beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN });
  app = createApp(createTestApiDeps(context).deps);
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

describe("API key authentication", () => {
  it("refuses a request without a key", async () => {
    const response = await request(app).get("/api/events");
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ message: "Missing API key" });
  });

  it("refuses an unknown key", async () => {
    const response = await request(app).get("/api/events").set("x-api-key", "pk_not-a-real-key");
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ message: "Invalid API key" });
  });

  it("refuses a revoked key at once", async () => {
    const created = await request(app)
      .post(`/api/admin/organizations/${org.orgId}/keys`)
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(created.status).toBe(201);
    const { keyId, apiKey } = created.body as { keyId: string; apiKey: string };
    expect((await request(app).get("/api/nothing-here").set("x-api-key", apiKey)).status).toBe(404);

    await revokeApiKey({ db: context.db, config: context.config }, { keyId });
    const response = await request(app).get("/api/nothing-here").set("x-api-key", apiKey);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ message: "Invalid API key" });
  });

  it("records when a key was last used", async () => {
    await request(app).get("/api/nothing-here").set("x-api-key", org.apiKey);
    await expect
      .poll(async () => (await context.db.apiKey.findFirst({ where: { orgId: org.orgId } }))?.lastUsedAt)
      .toBeInstanceOf(Date);
  });
});

describe("error format", () => {
  it("answers malformed JSON with 400", async () => {
    const response = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .set("content-type", "application/json")
      .send('{"payload": ');
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: "Request body is not valid JSON" });
  });

  it("answers a body over 16 KiB with 413", async () => {
    const response = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .set("content-type", "application/json")
      .send(JSON.stringify({ payload: "x".repeat(17 * 1024) }));
    expect(response.status).toBe(413);
    expect(response.body).toEqual({ message: "Request body is too large" });
  });

  it("answers a body of another content type with 415", async () => {
    const response = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .set("content-type", "text/plain")
      .send("hello");
    expect(response.status).toBe(415);
    expect(response.body).toEqual({ message: "Content-Type must be application/json" });
  });

  it("answers an unknown route with 404 in JSON", async () => {
    for (const path of ["/nowhere", "/api/nowhere"]) {
      const response = await request(app).get(path).set("x-api-key", org.apiKey);
      expect(response.status).toBe(404);
      expect(response.headers["content-type"]).toMatch(/^application\/json/);
      expect(response.body).toEqual({ message: "Not found" });
    }
  });

  it("answers a failing handler with 500 and never its internal message", async () => {
    // A handler whose database has gone away throws an error naming the database; none of it leaks.
    const broken = createDb(`${context.config.DATABASE_URL}_missing`);
    const brokenApp = createApp({ ...createTestApiDeps(context).deps, db: broken });
    const response = await request(brokenApp)
      .get("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);
    await broken.$disconnect();
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ message: "Unable to complete the admin request" });
    expect(response.text).not.toMatch(/missing|database|prisma|at /i);
  });

  it("echoes a request id, or makes one", async () => {
    const given = await request(app).get("/healthz").set("x-request-id", "abc-123");
    expect(given.headers["x-request-id"]).toBe("abc-123");
    const made = await request(app).get("/healthz");
    expect(made.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("admin API", () => {
  it("is closed without the admin token", async () => {
    const missing = await request(app).get("/api/admin/organizations");
    expect(missing.status).toBe(401);
    expect(missing.body).toEqual({ message: "Missing admin token" });
    const wrong = await request(app).get("/api/admin/organizations").set("authorization", "Bearer nope");
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ message: "Invalid admin token" });
  });

  it("does not exist when no admin token is configured", async () => {
    const { deps } = createTestApiDeps(context);
    const closed = createApp({ ...deps, config: { ...deps.config, ADMIN_TOKEN: undefined } });
    const response = await request(closed)
      .get("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Not found" });
  });

  it("creates an organization whose key works and lists it", async () => {
    const created = await request(app)
      .post("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`)
      .send({ email: "Admin-API@Example.com", name: "Via HTTP" });
    expect(created.status).toBe(201);
    expect(Object.keys(created.body).sort()).toEqual(["accountId", "apiKey", "keyId", "orgId", "signingSecret"]);
    expect((await request(app).get("/api/nowhere").set("x-api-key", created.body.apiKey)).status).toBe(404);

    const listed = await request(app)
      .get("/api/admin/organizations?email=admin-api@example.com")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      expect.objectContaining({ id: created.body.orgId, name: "Via HTTP", ownerEmail: "admin-api@example.com" }),
    ]);
  });

  it("lists an organization's members, the owner first, and 404 for an unknown organization", async () => {
    const admin = (call: request.Test) => call.set("authorization", `Bearer ${ADMIN_TOKEN}`);
    const created = await admin(request(app).post("/api/admin/organizations")).send({
      email: "owner@members.example",
      name: "Members",
    });
    const orgId = created.body.orgId as string;
    const added = await admin(request(app).post(`/api/admin/organizations/${orgId}/members`)).send({
      email: "second@members.example",
    });
    expect(added.status).toBe(201);
    const listed = await admin(request(app).get(`/api/admin/organizations/${orgId}/members`));
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      { accountId: created.body.accountId, email: "owner@members.example", role: "owner", since: expect.any(String) },
      { accountId: added.body.accountId, email: "second@members.example", role: "member", since: expect.any(String) },
    ]);
    const missing = await admin(request(app).get("/api/admin/organizations/org_00000000000000000000000000/members"));
    expect(missing.status).toBe(404);
  });

  it("refuses bad input with one clear sentence", async () => {
    const response = await request(app)
      .post("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`)
      .send({ email: "not-an-email", name: "X" });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: "'email' must be a valid email address" });
    const unknown = await request(app)
      .post("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`)
      .send({ email: "a@example.com", name: "X", plan: "gold" });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toEqual({ message: "Unknown field 'plan'" });
  });
});

describe("health", () => {
  it("is alive and ready when Postgres and Redis answer", async () => {
    expect((await request(app).get("/healthz")).body).toEqual({ status: "ok" });
    const ready = await request(app).get("/readyz");
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: "ready", postgres: "up", redis: "up" });
  });

  it("is not ready when Postgres is unreachable", async () => {
    const unreachable = createDb("postgresql://postgres@127.0.0.1:1/nothing");
    const notReady = createApp({ ...createTestApiDeps(context).deps, db: unreachable });
    const response = await request(notReady).get("/readyz");
    await unreachable.$disconnect();
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ message: "Not ready: Postgres unreachable" });
  });

  it("is not ready when Redis is unreachable", async () => {
    const { Redis } = await import("ioredis");
    const deadRedis = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    deadRedis.on("error", () => {});
    const notReady = createApp({ ...createTestApiDeps(context).deps, redis: deadRedis });
    const response = await request(notReady).get("/readyz");
    deadRedis.disconnect();
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ message: "Not ready: Redis unreachable" });
  });
});
