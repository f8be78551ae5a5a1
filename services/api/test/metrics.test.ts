import type { Queue } from "bullmq";
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
import { createApiMetrics, QUEUE_COUNT_TIMEOUT_MS } from "../src/metrics/api-metrics.ts";

// Contract §8: GET /metrics in Prometheus text: HTTP latency by route pattern, queue depth, Node.

const HOUR_MS = 60 * 60 * 1000;

let context: TestContext;
let org: TestOrganization;
let deps: ApiDeps;
let queues: Queue[];

beforeAll(async () => {
  context = await createTestContext();
  const built = createTestApiDeps(context);
  deps = built.deps;
  queues = [built.queue, built.cronQueue];
  org = await createTestOrganization(context);
});
afterAll(async () => {
  await Promise.all(queues.map((queue) => queue.close()));
  await context.close();
});

/** Every value of one label across the samples of a metric. */
function labelValues(text: string, name: string, label: string): Set<string> {
  const values = new Set<string>();
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    const value = new RegExp(`[{,]${label}="([^"]*)"`).exec(line)?.[1];
    if (value !== undefined) values.add(value);
  }
  return values;
}

const eventBody = () => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(Date.now() + HOUR_MS).toISOString(),
});

describe("GET /metrics", () => {
  it("labels request durations by route pattern and status, never by the raw URL", async () => {
    const app = createApp({ ...deps, metrics: createApiMetrics({ queues }) });
    const created = await request(app).post("/api/events").set("x-api-key", org.apiKey).send(eventBody());
    expect(created.status).toBe(200);
    const id = created.body.id as string;
    for (let n = 0; n < 2; n++) {
      expect((await request(app).get(`/api/events/${id}`).set("x-api-key", org.apiKey)).status).toBe(200);
    }
    // Case and trailing slash vary the URL, not the route.
    expect((await request(app).get(`/API/Events/${id}/`).set("x-api-key", org.apiKey)).status).toBe(200);
    expect((await request(app).get("/api/events/evt_unknown").set("x-api-key", org.apiKey)).status).toBe(404);
    // A handler's error leaves the events router before the response ends: still its route.
    const refused = await request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey).send({});
    expect(refused.status).toBe(400);
    expect((await request(app).get("/api/no-such-thing").set("x-api-key", org.apiKey)).status).toBe(404);
    expect((await request(app).get(`/api/events/${id}`)).status).toBe(401);
    expect((await request(app).get("/healthz")).status).toBe(200);

    const response = await request(app).get("/metrics");
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.text;
    const count = (method: string, route: string, status: number) =>
      sample(text, "http_request_duration_seconds_count", { method, route, status_code: String(status) });

    expect(count("POST", "/api/events", 200)).toBe(1);
    expect(count("GET", "/api/events/:eventId", 200)).toBe(3);
    expect(count("GET", "/api/events/:eventId", 404)).toBe(1);
    expect(count("PUT", "/api/events/:eventId", 400)).toBe(1);
    expect(count("GET", "unmatched", 404)).toBe(1);
    // Refused before routing (no key): the route is not known yet.
    expect(count("GET", "unmatched", 401)).toBe(1);
    expect(count("GET", "/healthz", 200)).toBe(1);
    expect(
      sample(text, "http_request_duration_seconds_bucket", {
        method: "GET",
        route: "/api/events/:eventId",
        status_code: "200",
        le: "+Inf",
      }),
    ).toBe(3);
    expect([...labelValues(text, "http_request_duration_seconds_count", "route")].sort()).toEqual([
      "/api/events",
      "/api/events/:eventId",
      "/healthz",
      "unmatched",
    ]);
    expect(text).not.toContain(id);
    // Node's own metrics come with it.
    expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(text).toContain("nodejs_eventloop_lag_seconds");
  });

  it("counts each queue's jobs by state at scrape time", async () => {
    const app = createApp({ ...deps, metrics: createApiMetrics({ queues }) });
    const before = await request(app).get("/metrics");
    const delayedBefore = sample(before.text, "punctual_queue_jobs", { queue: "events", state: "delayed" }) ?? 0;
    for (let n = 0; n < 3; n++) {
      expect((await request(app).post("/api/events").set("x-api-key", org.apiKey).send(eventBody())).status).toBe(200);
    }
    const text = (await request(app).get("/metrics")).text;
    expect(sample(text, "punctual_queue_jobs", { queue: "events", state: "delayed" })).toBe(delayedBefore + 3);
    for (const state of ["waiting", "delayed", "active", "completed", "failed"]) {
      expect(sample(text, "punctual_queue_jobs", { queue: "cron", state })).toBe(0);
    }
  });

  it("answers within the count timeout when Redis does not, leaving the queue out", async () => {
    const stuck = { name: "stuck", getJobCounts: () => new Promise<never>(() => {}) } as unknown as Queue;
    const app = createApp({ ...deps, metrics: createApiMetrics({ queues: [stuck, ...queues] }) });
    const started = Date.now();
    const response = await request(app).get("/metrics");
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(QUEUE_COUNT_TIMEOUT_MS + 1_000);
    expect(response.text).not.toContain('queue="stuck"');
    expect(sample(response.text, "punctual_queue_jobs", { queue: "cron", state: "waiting" })).toBe(0);
  });

  it("keeps one registry per app, so two apps in one process never share counts", async () => {
    const first = createApp(deps);
    const second = createApp(deps);
    await request(first).get("/healthz");
    await request(first).get("/healthz");
    await request(second).get("/healthz");
    const route = { method: "GET", route: "/healthz", status_code: "200" };
    expect(sample((await request(first).get("/metrics")).text, "http_request_duration_seconds_count", route)).toBe(2);
    expect(sample((await request(second).get("/metrics")).text, "http_request_duration_seconds_count", route)).toBe(1);
  });
});
