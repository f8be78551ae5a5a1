import { type AdmissionStore, type BreakerSettings, createAdmissionStore, createFailFastRedis } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { sample } from "../../../test/support/prometheus.ts";
import { type ApiDeps, createApp } from "../src/app.ts";
import { createApiMetrics } from "../src/metrics/api-metrics.ts";

// Contract §10.3 through the HTTP API: GET /api/destinations and POST /api/destinations/reset over
// the health the workers keep in Redis. The store's own calls report outcomes here, as a worker's
// breaker does (real Redis, this file's prefix).

const ORIGIN_INVALID =
  "'origin' must be an http or https origin such as https://example.com:8443 (scheme, host and port, no path)";
const UNAVAILABLE = "Destination health is unavailable (Redis did not answer), please try again later";
/** Two failures in a row make an origin Unhealthy, at once. */
const BREAKER: BreakerSettings = { failures: 2, minSpanMs: 0 };

let context: TestContext;
let deps: ApiDeps;
let app: ReturnType<typeof createApp>;
let store: AdmissionStore;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000" });
  deps = createTestApiDeps(context).deps;
  app = createApp(deps);
  store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
});
afterAll(() => context.close());

const api = (org: TestOrganization, target = app) => ({
  list: () => request(target).get("/api/destinations").set("x-api-key", org.apiKey),
  reset: (body: object) => request(target).post("/api/destinations/reset").set("x-api-key", org.apiKey).send(body),
});

async function refused(call: PromiseLike<request.Response>, status: number, message: string): Promise<void> {
  const response = await call;
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { message } });
}

const isIso = (text: unknown) => typeof text === "string" && new Date(text).toISOString() === text;

describe("GET /api/destinations", () => {
  it("lists the organization's origins by origin, with their health and what waits for them", async () => {
    const org = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    expect((await api(org).list()).body).toEqual([]);

    const before = Date.now();
    await store.report(org.orgId, "https://pay.example:8443", "ff", BREAKER);
    await store.report(org.orgId, "https://api.example", "fs", BREAKER);
    await store.report(org.orgId, "http://10.0.0.5:8080", "f", BREAKER);
    await store.report(other.orgId, "https://pay.example:8443", "s", BREAKER);
    const oldest = Date.parse("2030-01-15T09:00:00.000Z");
    await store.publishHeld(org.orgId, "worker-a", {
      flows: new Map(),
      origins: new Map([["https://pay.example:8443", { waiting: 4, oldestWaitingSince: oldest + 1000 }]]),
    });
    await store.publishHeld(org.orgId, "worker-b", {
      flows: new Map(),
      origins: new Map([["https://pay.example:8443", { waiting: 3, oldestWaitingSince: oldest }]]),
    });

    const response = await api(org).list();
    expect(response.status).toBe(200);
    const list = response.body as Record<string, unknown>[];
    expect(list).toEqual([
      {
        origin: "http://10.0.0.5:8080",
        state: "Healthy",
        consecutiveFailures: 1,
        since: expect.any(String),
        waiting: 0,
        oldestWaitingSince: null,
      },
      {
        origin: "https://api.example",
        state: "Healthy",
        consecutiveFailures: 0,
        since: expect.any(String),
        waiting: 0,
        oldestWaitingSince: null,
      },
      {
        origin: "https://pay.example:8443",
        state: "Unhealthy",
        consecutiveFailures: 2,
        since: expect.any(String),
        waiting: 7,
        oldestWaitingSince: "2030-01-15T09:00:00.000Z",
      },
    ]);
    for (const destination of list) {
      expect(isIso(destination.since)).toBe(true);
      expect(Date.parse(destination.since as string)).toBeGreaterThanOrEqual(before - 1000);
    }
    // The other organization's record of the same origin is its own.
    expect((await api(other).list()).body).toEqual([
      expect.objectContaining({ origin: "https://pay.example:8443", state: "Healthy", consecutiveFailures: 0 }),
    ]);
  });

  it("answers 503 with one sentence when Redis does not answer, without waiting for it", async () => {
    const org = await createTestOrganization(context);
    const dead = createFailFastRedis("redis://127.0.0.1:1");
    dead.on("error", () => {});
    try {
      const offline = createApp({ ...deps, admissionStore: createAdmissionStore(dead, context.config.QUEUE_PREFIX) });
      const started = Date.now();
      await refused(api(org, offline).list(), 503, UNAVAILABLE);
      await refused(api(org, offline).reset({ origin: "https://pay.example" }), 503, UNAVAILABLE);
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      dead.disconnect();
    }
  });

  it("needs the organization's API key", async () => {
    expect((await request(app).get("/api/destinations")).status).toBe(401);
    expect((await request(app).post("/api/destinations/reset").send({ origin: "https://a.example" })).status).toBe(401);
  });
});

describe("POST /api/destinations/reset", () => {
  it("makes an Unhealthy origin Healthy at once and answers its record", async () => {
    const org = await createTestOrganization(context);
    await store.report(org.orgId, "https://pay.example:8443", "fff", BREAKER);
    const unhealthy = (await api(org).list()).body[0];
    expect(unhealthy).toMatchObject({ state: "Unhealthy", consecutiveFailures: 3 });

    const reset = await api(org).reset({ origin: "https://pay.example:8443" });
    expect(reset.status, JSON.stringify(reset.body)).toBe(200);
    expect(reset.body).toEqual({
      origin: "https://pay.example:8443",
      state: "Healthy",
      consecutiveFailures: 0,
      since: expect.any(String),
      waiting: 0,
      oldestWaitingSince: null,
    });
    expect(Date.parse(reset.body.since)).toBeGreaterThanOrEqual(Date.parse(unhealthy.since));
    expect((await api(org).list()).body).toEqual([reset.body]);
    // Failures after it count from 0: one more is not enough to make it Unhealthy again.
    expect((await store.report(org.orgId, "https://pay.example:8443", "f", BREAKER)).state).toBe("Healthy");
    // A Healthy origin can be reset too; nothing changes but its failures in a row.
    const again = await api(org).reset({ origin: "https://pay.example:8443" });
    expect(again.body).toMatchObject({ state: "Healthy", consecutiveFailures: 0 });
  });

  it("reads the origin as the workers write it: default port, case and a trailing slash do not matter", async () => {
    const org = await createTestOrganization(context);
    await store.report(org.orgId, "https://pay.example", "ff", BREAKER);
    for (const origin of ["https://PAY.example:443/", "https://pay.example/", "https://pay.example"]) {
      const reset = await api(org).reset({ origin });
      expect(reset.status, JSON.stringify(reset.body)).toBe(200);
      expect(reset.body.origin).toBe("https://pay.example");
    }
  });

  it("answers 404 for an origin the organization has no record of", async () => {
    const org = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    await store.report(other.orgId, "https://pay.example", "ff", BREAKER);
    await refused(
      api(org).reset({ origin: "https://pay.example" }),
      404,
      "No destination with origin 'https://pay.example'",
    );
    await refused(
      api(org).reset({ origin: "http://unknown.example:8080/" }),
      404,
      "No destination with origin 'http://unknown.example:8080'",
    );
    // The other organization's origin is still Unhealthy.
    expect((await api(other).list()).body).toEqual([expect.objectContaining({ state: "Unhealthy" })]);
  });

  it("refuses a missing or malformed origin and unknown fields with one sentence each", async () => {
    const org = await createTestOrganization(context);
    await refused(api(org).reset({}), 400, "'origin' is required");
    for (const origin of [
      "https://pay.example/hook",
      "https://pay.example?x=1",
      "https://pay.example#top",
      "https://user:secret@pay.example",
      "ftp://pay.example",
      "pay.example",
      "",
      42,
      null,
    ]) {
      await refused(api(org).reset({ origin }), 400, ORIGIN_INVALID);
    }
    await refused(api(org).reset({ origin: "https://pay.example", url: "x" }), 400, "Unknown field 'url'");
  });
});

describe("GET /metrics", () => {
  it("counts the Unhealthy origins of every organization in one series, never one per origin", async () => {
    const metrics = createApiMetrics({
      defaultMetrics: false,
      flows: { unhealthyDestinations: () => store.unhealthyCount(), pausedFlows: async () => 0 },
    });
    const target = createApp({ ...deps, metrics });
    const scrape = async () => (await request(target).get("/metrics")).text;
    const unhealthy = async () => sample(await scrape(), "punctual_destination_state", { state: "Unhealthy" });
    const before = (await unhealthy()) ?? 0;
    const one = await createTestOrganization(context);
    const two = await createTestOrganization(context);
    await store.report(one.orgId, "https://a.example", "ff", BREAKER);
    await store.report(one.orgId, "https://b.example", "ff", BREAKER);
    await store.report(two.orgId, "https://a.example", "ff", BREAKER);
    expect(await unhealthy()).toBe(before + 3);
    expect((await api(two, target).reset({ origin: "https://a.example" })).status).toBe(200);
    expect(await unhealthy()).toBe(before + 2);
    const series = (await scrape()).split("\n").filter((line) => line.startsWith("punctual_destination_state"));
    expect(series).toEqual([`punctual_destination_state{state="Unhealthy"} ${before + 2}`]);
  });

  it("leaves the series out while Redis does not answer", async () => {
    const dead = createFailFastRedis("redis://127.0.0.1:1");
    dead.on("error", () => {});
    try {
      const offline = createAdmissionStore(dead, context.config.QUEUE_PREFIX);
      const metrics = createApiMetrics({
        defaultMetrics: false,
        flows: { unhealthyDestinations: () => offline.unhealthyCount(), pausedFlows: async () => 0 },
      });
      const text = (await request(createApp({ ...deps, metrics })).get("/metrics")).text;
      expect(sample(text, "punctual_destination_state", { state: "Unhealthy" })).toBeUndefined();
      expect(sample(text, "punctual_flows_paused")).toBe(0);
    } finally {
      dead.disconnect();
    }
  });
});
