import { withTimeout } from "@punctual/core";
import type { Queue } from "bullmq";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { AdminSurface } from "../rate-limit/admin-auth-failures.ts";
import { type FlowReads, registerFlowGauges } from "./flow-gauges.ts";
import { registerServiceGauges, type ServiceReads } from "./service-gauges.ts";

/** The queue states reported by `punctual_queue_jobs` (contract §8: queue depth by state). */
export const QUEUE_STATES = ["waiting", "delayed", "active", "completed", "failed"] as const;

/** A scrape never waits longer than this for Redis: during an outage the queue series are left out. */
export const QUEUE_COUNT_TIMEOUT_MS = 1_000;

/** The API's metrics: one registry per app, so several apps in one process (tests) never clash. */
export interface ApiMetrics {
  registry: Registry;
  /** `http_request_duration_seconds{method,route,status_code}`. */
  httpRequestDuration: Histogram<"method" | "route" | "status_code">;
  /** `punctual_admin_auth_failures_total{surface}`: wrong credentials, by admin_api / queue_dashboard / console. */
  adminAuthFailures: Counter<"surface">;
}

export interface ApiMetricsOptions {
  /** Queues whose job counts are read at each scrape (events, cron, maintenance). */
  queues?: readonly Pick<Queue, "name" | "getJobCounts">[];
  /** Node's process metrics (CPU, memory, event loop lag, GC); on by default. */
  defaultMetrics?: boolean;
  /** Dependencies, live workers and the reconciler's last run, read at each scrape (service-gauges.ts). */
  service?: ServiceReads;
  /** Unhealthy destinations and paused flows, read at each scrape (flow-gauges.ts). */
  flows?: FlowReads;
}

function countsWithin(
  queue: Pick<Queue, "getJobCounts">,
  timeoutMs: number,
): Promise<Record<string, number> | undefined> {
  return withTimeout(queue.getJobCounts(...QUEUE_STATES), timeoutMs, undefined).catch(() => undefined);
}

/** Builds the API's registry: HTTP latency by route pattern, queue depth read at scrape time, Node metrics. */
export function createApiMetrics(options: ApiMetricsOptions = {}): ApiMetrics {
  const registry = new Registry();
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry });

  const httpRequestDuration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time from a request's arrival to the end of its response, by method, route pattern and status code",
    labelNames: ["method", "route", "status_code"] as const,
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  // Labelled by surface only (three values): the client address would make the series unbounded.
  const adminAuthFailures = new Counter({
    name: "punctual_admin_auth_failures_total",
    help: "Logins refused for a wrong admin token (or, at the console's sign-in, a wrong API key), by surface (admin_api, queue_dashboard, console)",
    labelNames: ["surface"] as const,
    registers: [registry],
  });
  // Every surface shown (at 0) from the first scrape, so that rate() sees the first failure too.
  const surfaces: readonly AdminSurface[] = ["admin_api", "queue_dashboard", "console"];
  for (const surface of surfaces) adminAuthFailures.inc({ surface }, 0);

  const queues = options.queues ?? [];
  new Gauge({
    name: "punctual_queue_jobs",
    help: "Jobs in each BullMQ queue by state, counted in Redis at scrape time (absent while Redis does not answer)",
    labelNames: ["queue", "state"] as const,
    registers: [registry],
    async collect() {
      const counts = await Promise.all(queues.map((queue) => countsWithin(queue, QUEUE_COUNT_TIMEOUT_MS)));
      // Reset first: a queue that cannot be counted now shows no series rather than a stale value.
      this.reset();
      for (const [index, queue] of queues.entries()) {
        const count = counts[index];
        if (!count) continue;
        for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, count[state] ?? 0);
      }
    },
  });

  if (options.service) registerServiceGauges(registry, options.service);
  if (options.flows) registerFlowGauges(registry, options.flows);

  return { registry, httpRequestDuration, adminAuthFailures };
}
