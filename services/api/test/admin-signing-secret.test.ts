import type { Express } from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

// The admin API's signing-secret rotation with overlap: rotate answers until when the replaced
// secret still signs, the organization list shows it, end-overlap ends it early. Each answer has the
// shape the OpenAPI document declares. The overlap is the default 24 hours.

const ADMIN_TOKEN = "rot-Vb7nQ2xLk9Tz4Wm8Pd";
const DAY_MS = 86_400_000;

type Json = Record<string, unknown>;

let context: TestContext;
let app: Express;
let schemas: Record<string, { properties: Json; required: string[] }>;

beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN });
  app = createApp(createTestApiDeps(context).deps);
  schemas = (await request(app).get("/api/openapi.json")).body.components.schemas;
});
afterAll(() => context.close());

const admin = (method: "get" | "post", path: string) =>
  request(app)[method](path).set("authorization", `Bearer ${ADMIN_TOKEN}`);
const rotate = (orgId: string, body: Json = {}) =>
  admin("post", `/api/admin/organizations/${orgId}/signing-secret/rotate`).send(body);
const endOverlap = (orgId: string) => admin("post", `/api/admin/organizations/${orgId}/signing-secret/end-overlap`);
const listed = async (orgId: string) => {
  const response = await admin("get", "/api/admin/organizations");
  expect(response.status).toBe(200);
  return (response.body as Json[]).find((org) => org.id === orgId);
};

/** The body has exactly the fields the document's component declares, every required one included. */
function expectShapeOf(component: string, body: Json) {
  const schema = schemas[component];
  expect(schema, component).toBeDefined();
  expect(Object.keys(body).sort()).toEqual(Object.keys(schema?.properties ?? {}).sort());
  expect(Object.keys(body)).toEqual(expect.arrayContaining(schema?.required ?? []));
}

const stored = (orgId: string) =>
  context.db.organization.findUniqueOrThrow({
    where: { id: orgId },
    select: { signingSecret: true, previousSigningSecret: true, previousSecretValidUntil: true },
  });

describe("POST /api/admin/organizations/{orgId}/signing-secret/rotate", () => {
  it("answers the new secret and previousSecretValidUntil, 24 h from now, and keeps the old secret until then", async () => {
    const org = await createTestOrganization(context);
    const before = Date.now();
    const response = await rotate(org.orgId);
    const after = Date.now();

    expect(response.status).toBe(200);
    expect(response.headers["cache-control"]).toBe("no-store");
    expectShapeOf("RotatedSigningSecret", response.body);
    const { signingSecret, previousSecretValidUntil } = response.body;
    expect(response.body.orgId).toBe(org.orgId);
    expect(signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(signingSecret).not.toBe(org.signingSecret);
    const until = Date.parse(previousSecretValidUntil);
    expect(new Date(until).toISOString()).toBe(previousSecretValidUntil);
    // Set by the database's clock; this machine's two clocks agree to well within a second.
    expect(until).toBeGreaterThanOrEqual(before + DAY_MS - 1_000);
    expect(until).toBeLessThanOrEqual(after + DAY_MS + 1_000);
    expect(await stored(org.orgId)).toEqual({
      signingSecret,
      previousSigningSecret: org.signingSecret,
      previousSecretValidUntil: new Date(previousSecretValidUntil),
    });
  });

  it("a second rotation during the overlap drops the first secret and keeps the one it replaced", async () => {
    const org = await createTestOrganization(context);
    const first = (await rotate(org.orgId)).body;
    const custom = "the operator's own secret, 2026 edition";
    const second = await rotate(org.orgId, { signingSecret: custom });

    expect(second.status).toBe(200);
    expect(second.body.signingSecret).toBe(custom);
    expect(Date.parse(second.body.previousSecretValidUntil)).toBeGreaterThanOrEqual(
      Date.parse(first.previousSecretValidUntil),
    );
    const row = await stored(org.orgId);
    expect(row.previousSigningSecret).toBe(first.signingSecret);
    expect(JSON.stringify(row)).not.toContain(org.signingSecret);
  });

  it("answers 404 for an organization that does not exist and changes nothing", async () => {
    const response = await rotate("org_00000000000000000000000000");
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Unable to find organization" });
  });
});

describe("GET /api/admin/organizations", () => {
  it("gives every entry previousSecretValidUntil: null without an overlap, the rotation's end during one", async () => {
    const quiet = await createTestOrganization(context);
    const rotatedOrg = await createTestOrganization(context);
    const rotated = (await rotate(rotatedOrg.orgId)).body;

    const quietEntry = await listed(quiet.orgId);
    expect(quietEntry).toMatchObject({ previousSecretValidUntil: null });
    expectShapeOf("Organization", quietEntry ?? {});
    expect(await listed(rotatedOrg.orgId)).toMatchObject({
      previousSecretValidUntil: rotated.previousSecretValidUntil,
    });
  });
});

describe("POST /api/admin/organizations/{orgId}/signing-secret/end-overlap", () => {
  it("ends the overlap: answers previousSecretValidUntil null, forgets the old secret, the list shows null", async () => {
    const org = await createTestOrganization(context);
    const rotated = (await rotate(org.orgId)).body;

    const response = await endOverlap(org.orgId);

    expect(response.status).toBe(200);
    expect(response.headers["cache-control"]).toBe("no-store");
    expect(response.body).toEqual({ orgId: org.orgId, previousSecretValidUntil: null });
    expectShapeOf("EndedSigningSecretOverlap", response.body);
    expect(await stored(org.orgId)).toEqual({
      signingSecret: rotated.signingSecret,
      previousSigningSecret: null,
      previousSecretValidUntil: null,
    });
    expect(await listed(org.orgId)).toMatchObject({ previousSecretValidUntil: null });
  });

  it("answers 200 and changes nothing when no overlap is under way", async () => {
    const org = await createTestOrganization(context);
    const response = await endOverlap(org.orgId);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ orgId: org.orgId, previousSecretValidUntil: null });
    expect((await stored(org.orgId)).signingSecret).toBe(org.signingSecret);
  });

  it("answers 404 for an unknown organization and 400 for an id of the wrong form", async () => {
    const missing = await endOverlap("org_00000000000000000000000000");
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ message: "Unable to find organization" });

    const malformed = await endOverlap("acme");
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ message: expect.any(String) });
  });

  it("requires the admin token", async () => {
    const org = await createTestOrganization(context);
    await rotate(org.orgId);
    const response = await request(app).post(`/api/admin/organizations/${org.orgId}/signing-secret/end-overlap`);
    expect(response.status).toBe(401);
    expect(response.body).toEqual({ message: "Missing admin token" });
    expect((await stored(org.orgId)).previousSigningSecret).not.toBeNull();
  });
});
