import { createEvent, createFailFastRedis, type Redis, readServiceStatus } from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../services/api/src/app.ts";
import { createApiMetrics } from "../../services/api/src/metrics/api-metrics.ts";
import { SERVICE_READ_TIMEOUT_MS } from "../../services/api/src/metrics/service-gauges.ts";
import { type RunningApi, startApi } from "../../services/api/src/server.ts";
import { createWorker, type DeliveryWorker } from "../../services/worker/src/worker.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { freePort } from "../support/processes.ts";
import { sample } from "../support/prometheus.ts";
import { dashboardQueries, exportedNames, metricNames, type Query, ruleQueries } from "./monitoring-files.ts";

// No dashboard or alert drifting from the code: every metric a panel or a rule selects must be one
// that a running API or worker exports. Both run here as in production (startApi, createWorker),
// each scraped at its /metrics after some traffic, so labelled series exist.

/** Series Prometheus writes itself, for each scrape target; no process exports them. */
const PROMETHEUS_SERIES = new Set(["up"]);

let context: TestContext;
let org: TestOrganization;
let api: RunningApi;
let worker: DeliveryWorker;
let overdueEventId: string;

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    RECONCILE_INTERVAL_MS: "500",
    // Short, so that an event due a minute ago is overdue and the reconciler fails it.
    QUEUE_GRACE_MS: "1000",
  });
  org = await createTestOrganization(context);
  // Pending, due a minute ago, never queued: past QUEUE_GRACE_MS (1 s), so the worker's first
  // reconciler run fails it. Made before the worker starts: a run that began before it existed
  // would find it missing a job and queue it instead.
  const { event } = await createEvent(
    context.db,
    {
      orgId: org.orgId,
      payload: "{}",
      destination: "https://example.com/hook",
      scheduledTime: new Date(Date.now() - 60_000),
    },
    new Date(),
    context.config.MAX_EVENTS_PER_MONTH,
  );
  overdueEventId = event.id;
  api = await startApi({ ...context.config, PORT: 0, HOST: "127.0.0.1" }, context.logger);
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await api?.stop();
  await context?.close();
});

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
}

const scrapeApi = () => scrape(`http://127.0.0.1:${api.port}/metrics`);
const scrapeWorker = () => scrape(`http://127.0.0.1:${worker.healthPort}/metrics`);

/** Each metric name the queries select that is not in `exported`, with where it is used. */
function missing(queries: Query[], exported: Set<string>): string[] {
  return queries.flatMap((query) =>
    metricNames(query.expr)
      .filter((name) => !exported.has(name) && !PROMETHEUS_SERIES.has(name))
      .map((name) => `${name} (${query.source})`),
  );
}

describe("metrics of deploy/monitoring", () => {
  it("every metric the dashboard and the alert rules use is exported by the running API or worker", async () => {
    // A request of each kind the API's histogram labels, so its series exist at the scrape.
    const created = await fetch(`http://127.0.0.1:${api.port}/api/events`, {
      method: "POST",
      headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
      body: JSON.stringify({
        payload: "{}",
        destination: "https://example.com/hook",
        scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
      }),
    });
    expect(created.status).toBe(200);
    const exported = new Set([...exportedNames(await scrapeApi()), ...exportedNames(await scrapeWorker())]);
    // The check reads real expositions: the names it compares against are there.
    expect(exported).toContain("http_request_duration_seconds_bucket");
    expect(exported).toContain("punctual_delivery_lateness_seconds_bucket");

    const queries = [...ruleQueries(), ...dashboardQueries()];
    const used = new Set(queries.flatMap((query) => metricNames(query.expr)));
    expect(used).toContain("punctual_live_workers");
    expect(used).toContain("punctual_events_failed_to_queue_total");
    expect(missing(queries, exported)).toEqual([]);
  });

  it("a metric the running services do not export is reported missing", () => {
    // The comparison above, fed a query whose metric no process has: it must not pass unnoticed.
    const query = { source: "a made-up panel", expr: "sum(rate(punctual_deliveries_sent_total[5m]))" };
    expect(missing([query], new Set(["punctual_deliveries_total"]))).toEqual([
      "punctual_deliveries_sent_total (a made-up panel)",
    ]);
  });

  it("the API reports Postgres and Redis up, the live workers and the reconciler's last run", async () => {
    await expect
      .poll(async () => sample(await scrapeApi(), "punctual_reconciler_last_run_timestamp_seconds") ?? 0)
      .toBeGreaterThan(0);
    const text = await scrapeApi();
    expect(sample(text, "punctual_dependency_up", { dependency: "postgres" })).toBe(1);
    expect(sample(text, "punctual_dependency_up", { dependency: "redis" })).toBe(1);
    const status = await readServiceStatus(context.redis, context.config.QUEUE_PREFIX, new Date());
    expect(status.workers).toHaveLength(1);
    expect(sample(text, "punctual_live_workers")).toBe(1);
    const lastRun = sample(text, "punctual_reconciler_last_run_timestamp_seconds") ?? 0;
    expect(Math.abs(lastRun - Date.now() / 1000)).toBeLessThan(30);
  });

  it("a worker counts the events its reconciler marks Failed To Queue", async () => {
    await expect
      .poll(async () => (await context.db.event.findUnique({ where: { id: overdueEventId } }))?.status)
      .toBe("Failed To Queue");
    // Counted once the reconciler's run is over, a moment after the event's row changed.
    await expect.poll(async () => sample(await scrapeWorker(), "punctual_events_failed_to_queue_total")).toBe(1);
  });
});

describe("the API's service gauges without Postgres and Redis", () => {
  let db: Db;
  let redis: Redis;

  beforeAll(async () => {
    // Real clients of servers that are not there: nothing listens on these ports.
    db = createDb(`postgresql://postgres@127.0.0.1:${await freePort()}/punctual`);
    redis = createFailFastRedis(`redis://127.0.0.1:${await freePort()}`);
    redis.on("error", () => {});
  });
  afterAll(async () => {
    redis.disconnect();
    await db.$disconnect();
  });

  it("says each is down, leaves out what it cannot read, and answers within the read timeout", async () => {
    const metrics = createApiMetrics({
      defaultMetrics: false,
      service: {
        postgres: () => db.$queryRaw`SELECT 1`,
        redis: () => redis.ping(),
        status: () => readServiceStatus(redis, "nowhere", new Date()),
      },
    });
    const app = createApp({ ...createTestApiDeps(context).deps, metrics });
    const started = Date.now();
    const response = await request(app).get("/metrics");
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(SERVICE_READ_TIMEOUT_MS + 1_000);
    expect(sample(response.text, "punctual_dependency_up", { dependency: "postgres" })).toBe(0);
    expect(sample(response.text, "punctual_dependency_up", { dependency: "redis" })).toBe(0);
    // Absent rather than a made-up value: the Redis alert speaks for them.
    expect(sample(response.text, "punctual_live_workers")).toBeUndefined();
    expect(sample(response.text, "punctual_reconciler_last_run_timestamp_seconds")).toBeUndefined();
    expect(response.text).toContain("# TYPE punctual_live_workers gauge");
  });
});
