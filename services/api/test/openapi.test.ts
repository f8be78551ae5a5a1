import { createHash } from "node:crypto";
import { compileErrors, validate } from "@readme/openapi-parser";
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
import { cronJobRequestSchemas } from "../src/cron-jobs/schemas.ts";
import { eventRequestSchemas, listEventsQuerySchema } from "../src/events/schemas.ts";

// Contract §8: GET /api/openapi.json is an OpenAPI 3.1 document generated from the schemas that
// validate requests, and it covers every route the app serves. The payload limit is raised to
// 2048 so the test can see the deployment's own limits in the document.

const ADMIN_TOKEN = "oa-Qh4vT9wLr2Xk7ZpM3s";

type Json = Record<string, unknown>;
interface Operation {
  operationId: string;
  security: Json[];
  parameters?: Json[];
  requestBody?: { content: Record<string, { schema: Json }> };
  responses: Record<string, { headers?: Json; content?: Record<string, { schema: Json }> }>;
}
interface Document {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json> };
}

let context: TestContext;
let app: Express;
let document: Document;

beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN, MAX_PAYLOAD_BYTES: "2048" });
  app = createApp(createTestApiDeps(context).deps);
  const response = await request(app).get("/api/openapi.json");
  expect(response.status).toBe(200);
  document = response.body as Document;
});
afterAll(() => context.close());

// Express 5 (router 2) keeps each layer's mount path in `rawPath`; routes keep theirs in
// `route.path`. Bull Board (the `bullBoard` handler) is a whole app of its own, behind the admin
// credentials: it counts as one GET page at its path, its inner JSON calls are its own business.
// The console's pages (the `consolePages` handler) count as its page and the files below it.
interface Layer {
  rawPath?: string | string[];
  route?: { path: string | string[]; methods: Record<string, boolean> };
  handle: { stack?: Layer[]; name?: string };
}

/** Every `METHOD /path` the app answers, walked from its router stack. */
function registeredRoutes(target: Express): string[] {
  const routes = new Set<string>();
  const join = (prefix: string, path: string) => (path === "/" ? prefix : `${prefix}${path}`);
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
        for (const path of paths) {
          for (const method of Object.keys(layer.route.methods))
            routes.add(`${method.toUpperCase()} ${join(prefix, path)}`);
        }
        continue;
      }
      const mounts =
        layer.rawPath === undefined ? ["/"] : Array.isArray(layer.rawPath) ? layer.rawPath : [layer.rawPath];
      for (const mount of mounts) {
        if (layer.handle.stack) walk(layer.handle.stack, join(prefix, mount));
        else if (layer.handle.name === "bullBoard") routes.add(`GET ${join(prefix, mount)}`);
        else if (layer.handle.name === "consolePages") {
          // The console's files and its page for any other path under its mount.
          routes.add(`GET ${join(prefix, mount)}`);
          routes.add(`GET ${join(prefix, mount)}/{path}`);
        }
      }
    }
  };
  walk((target as unknown as { router: { stack: Layer[] } }).router.stack, "");
  return [...routes];
}

/** `GET /api/events/:eventId` and `GET /api/events/{eventId}` alike; paths match without case, as Express does. */
const normalize = (route: string) => {
  const [method = "", path = ""] = route.split(" ");
  return `${method} ${path
    .replace(/\/:[A-Za-z0-9_]+/g, "/{}")
    .replace(/\/\{[A-Za-z0-9_]+\}/g, "/{}")
    .toLowerCase()}`;
};

function documentedRoutes(): string[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
  );
}

/** The operation at `path` and `method`; fails the test when the document has none. */
function operation(path: string, method: string, from: Document = document): Operation {
  const found = from.paths[path]?.[method];
  if (!found) throw new Error(`${method.toUpperCase()} ${path} is not in the document`);
  return found;
}

function operations(): [string, Operation][] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item).map(
      ([method, operation]) => [`${method.toUpperCase()} ${path}`, operation] as [string, Operation],
    ),
  );
}

describe("GET /api/openapi.json", () => {
  it("is served without an API key, as JSON", async () => {
    const response = await request(app).get("/api/openapi.json");
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(document.openapi).toBe("3.1.0");
  });

  it("is a valid OpenAPI 3.1 document", async () => {
    const result = await validate(structuredClone(document) as never);
    expect(result.valid ? "valid" : compileErrors(result)).toBe("valid");
    // The validator is not vacuous: a broken copy fails it.
    const withoutDescription = structuredClone(document);
    operation("/api/events", "post", withoutDescription).responses["200"] = {};
    expect((await validate(withoutDescription as never)).valid).toBe(false);
    const duplicateId = structuredClone(document);
    operation("/api/events", "get", duplicateId).operationId = "createEvent";
    expect((await validate(duplicateId as never)).valid).toBe(false);
  });

  it("documents every route the app registers, and only those", () => {
    // The cron jobs family answers under each of its spellings (cron-jobs/routes.ts); the document
    // names each route under one, and its description lists the others.
    const documentedSpelling = (route: string) =>
      route.endsWith(" /api/cronjobs/preview")
        ? route.replace("/api/cronjobs/", "/api/cron-jobs/")
        : route.replace(/ \/api\/cron-jobs(\/\{\})?$/, " /api/cronjobs$1");
    const registered = [...new Set(registeredRoutes(app).map(normalize).map(documentedSpelling))];
    const documented = documentedRoutes().map(normalize);
    // The walk itself found the routes (so an empty walk cannot pass).
    expect(registered).toEqual(
      expect.arrayContaining(["POST /api/events", "GET /api/events/{}", "DELETE /api/cronjobs/{}", "GET /healthz"]),
    );
    expect(registered.filter((route) => !documented.includes(route))).toEqual([]);
    expect(documented.filter((route) => !registered.includes(route))).toEqual([]);
  });

  it("describes request bodies and queries with the validating schemas, at this deployment's limits", () => {
    const schemas = document.components.schemas;
    const limits = { maxPayloadBytes: 2048, now: () => new Date() };
    const events = eventRequestSchemas(limits);
    const cronJobs = cronJobRequestSchemas(limits);
    const create = schemas.CreateEventRequest as { properties: Record<string, Json>; required: string[] };
    expect(Object.keys(create.properties)).toEqual(Object.keys(events.CreateEventSchema.shape));
    expect(create.required).toEqual(["payload", "destination", "scheduledTime"]);
    expect(create).toMatchObject({ type: "object", additionalProperties: false });
    expect(create.properties.payload?.description).toContain("2048 bytes");
    expect(create.properties.destination).toMatchObject({ format: "uri", maxLength: 2048 });
    expect(schemas.UpdateEventRequest).toMatchObject({ properties: { status: { const: "Cancelled" } } });
    expect(Object.keys((schemas.CreateCronJobRequest as { properties: Json }).properties)).toEqual(
      Object.keys(cronJobs.CreateCronJobSchema.shape),
    );
    // `expression` or `every`, exactly one (contract §10.4): neither is required on its own.
    expect((schemas.CreateCronJobRequest as { required: string[] }).required).toEqual(["payload", "destination"]);
    expect(schemas.UpdateCronJobRequest).toMatchObject({ properties: { status: { enum: ["Active", "Disabled"] } } });

    const list = operation("/api/events", "get");
    expect(list.parameters?.map((parameter) => parameter.name)).toEqual(Object.keys(listEventsQuerySchema(1000).shape));
    const post = operation("/api/events", "post");
    expect(post.requestBody?.content["application/json"]?.schema).toEqual({
      $ref: "#/components/schemas/CreateEventRequest",
    });
  });

  it("describes authentication, headers, every status and the {message} error body", () => {
    const security = (document as unknown as { components: { securitySchemes: Json } }).components.securitySchemes;
    expect(security.apiKey).toEqual(expect.objectContaining({ type: "apiKey", in: "header", name: "x-api-key" }));
    expect(security.consoleSession).toEqual(
      expect.objectContaining({ type: "apiKey", in: "cookie", name: "punctual_session" }),
    );
    expect(document.components.schemas.Error).toEqual({
      type: "object",
      properties: { message: expect.objectContaining({ type: "string" }) },
      required: ["message"],
      additionalProperties: false,
    });

    for (const [route, operation] of operations()) {
      const statuses = Object.keys(operation.responses);
      if (route.includes(" /api/")) {
        expect(statuses, route).toContain("429");
        expect(Object.keys(operation.responses["429"]?.headers ?? {}), route).toContain("Retry-After");
        for (const response of Object.values(operation.responses)) {
          expect(Object.keys(response.headers ?? {}), route).toEqual(
            expect.arrayContaining(["RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"]),
          );
        }
      }
      if (route.includes(" /api/") && !route.includes("/api/admin/") && !route.endsWith("/openapi.json")) {
        // The console's session cookie stands for the key.
        expect(operation.security, route).toEqual([{ apiKey: [] }, { consoleSession: [] }]);
        expect(statuses, route).toEqual(expect.arrayContaining(["401", "500"]));
      }
      if (route.includes("/api/admin/")) {
        expect(operation.security, route).toEqual([{ adminBearer: [] }, { consoleSession: [] }]);
      }
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) >= 400) {
          expect(response.content?.["application/json"]?.schema, `${route} ${status}`).toEqual({
            $ref: "#/components/schemas/Error",
          });
        }
      }
    }

    const create = operation("/api/events", "post");
    expect(Object.keys(create.responses)).toEqual(["200", "400", "401", "403", "413", "415", "422", "429", "500"]);
    expect(JSON.stringify(create.responses["422"])).toContain(
      "Idempotency-Key was already used with a different request",
    );
    expect(create.parameters).toEqual([{ $ref: "#/components/parameters/IdempotencyKey" }]);
    expect(JSON.stringify(create.responses["400"])).toContain("Please make sure your scheduled time is in the future");
    const list = operation("/api/events", "get");
    expect(Object.keys(list.responses["200"]?.headers ?? {})).toContain("X-Next-Cursor");
    expect(Object.keys(operation("/api/cronjobs/{cronJobId}", "delete").responses)).toContain("204");
    expect(operation("/api/openapi.json", "get").security).toEqual([]);
    expect(operation("/admin/queues", "get").security).toEqual([{ adminBasic: [] }, { adminBearer: [] }]);
  });

  it("matches what the API really answers", async () => {
    const org = await createTestOrganization(context);
    const created = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send({
        payload: "{}",
        destination: "https://example.com/hook",
        scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
      });
    expect(created.status).toBe(200);
    const event = document.components.schemas.Event as { properties: Json; required: string[] };
    expect(Object.keys(event.properties)).toEqual(expect.arrayContaining(Object.keys(created.body)));
    expect(Object.keys(created.body)).toEqual(expect.arrayContaining(event.required));

    const got = await request(app).get(`/api/events/${created.body.id}`).set("x-api-key", org.apiKey);
    const withHistory = document.components.schemas.EventWithHistory as { required: string[] };
    // Every field an event without sentAt, failedAt or a callback is answered with is required.
    expect(Object.keys(got.body).sort()).toEqual([...withHistory.required].sort());
    expect(withHistory.required).toEqual(expect.arrayContaining(["callbackUrl", "labels"]));
  });

  it("requires a cron job record's callbackUrl and labels, always answered (null and {} when unset)", async () => {
    const org = await createTestOrganization(context);
    const created = await request(app)
      .post("/api/cronjobs")
      .set("x-api-key", org.apiKey)
      .send({ payload: "{}", destination: "https://example.com/hook", expression: "0 9 * * *" });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ callbackUrl: null, labels: {} });
    const withHistory = document.components.schemas.CronJobWithHistory as { required: string[] };
    expect(withHistory.required).toEqual(expect.arrayContaining(["callbackUrl", "labels"]));
    // An Active job also has its next firing, the one optional field of the record.
    expect(Object.keys(created.body).sort()).toEqual([...withHistory.required, "nextExecutionDate"].sort());

    const listed = await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey);
    const cronJob = document.components.schemas.CronJob as { required: string[] };
    expect(cronJob.required).toEqual(expect.arrayContaining(["callbackUrl", "labels"]));
    expect(Object.keys(listed.body[0]).sort()).toEqual([...cronJob.required, "nextExecutionDate"].sort());
  });

  it("keeps callbackUrl and labels optional in every create and edit body", () => {
    const { schemas } = document.components;
    for (const name of ["CreateEventRequest", "UpdateEventRequest", "CreateCronJobRequest", "UpdateCronJobRequest"]) {
      const body = schemas[name] as { properties: Json; required?: string[] };
      expect(Object.keys(body.properties), name).toEqual(expect.arrayContaining(["callbackUrl", "labels"]));
      expect(body.required ?? [], name).not.toContain("callbackUrl");
      expect(body.required ?? [], name).not.toContain("labels");
    }
  });
});

describe("GET /docs", () => {
  it("serves the reference page, loading Scalar and the document from this server only", async () => {
    const response = await request(app).get("/docs");
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/html/);
    expect(response.text).toContain('<script src="/docs/scalar.js"></script>');
    expect(response.text).toContain('"url":"/api/openapi.json"');
    expect(response.text).not.toMatch(/https?:\/\//);
    expect(response.headers["content-security-policy"]).toContain("connect-src 'self'");
  });

  it("runs no inline script but its own start script, allowed by hash", async () => {
    const response = await request(app).get("/docs");
    const policy = String(response.headers["content-security-policy"]);
    const scriptSources = /(?:^|;\s*)script-src ([^;]*)/.exec(policy)?.[1]?.split(" ") ?? [];
    const inline = [...response.text.matchAll(/<script>([^<]*)<\/script>/g)].map((match) => match[1] ?? "");
    expect(inline).toHaveLength(1);
    const hash = `'sha256-${createHash("sha256")
      .update(inline[0] ?? "")
      .digest("base64")}'`;
    expect(scriptSources).toEqual(["'self'", hash]);
    expect(policy).not.toMatch(/script-src[^;]*'unsafe-(inline|eval)'/);
  });

  it("serves Scalar's browser bundle from node_modules", async () => {
    const response = await request(app).get("/docs/scalar.js");
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/javascript/);
    expect(Number(response.headers["content-length"])).toBeGreaterThan(1_000_000);
  });
});
