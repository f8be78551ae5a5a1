import { createCronJob, cronSchedulerId } from "@punctual/core";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  fireEverySecond,
  PER_SECOND_CRON_SETTINGS,
  reconcilerSettled,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { sample } from "../../../test/support/prometheus.ts";
import { type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { LATENESS_BUCKETS } from "../src/metrics/worker-metrics.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// Contract §8: the worker's own /metrics (on its health port): deliveries by kind and outcome,
// lateness of first attempts, attempt durations, Node's metrics. Each test starts its own worker,
// and so its own registry: the counts it reads are its own deliveries', whatever ran before.

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;

beforeAll(async () => {
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", RETRY_DELAYS_MS: "100", ...PER_SECOND_CRON_SETTINGS });
  org = await createTestOrganization(context);
  // /fail always answers 503; everything else 200.
  receiver = await startTestReceiver(context, { status: (_n, req) => (req.path === "/fail" ? 503 : 200) });
});

afterAll(() => context?.close());

beforeEach(async () => {
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
  // Its first run over, the reconciler stays away from the per-second schedulers installed below.
  await reconcilerSettled(context);
});

afterEach(async () => {
  await worker.stop();
});

async function scrape(): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${worker.healthPort}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.text();
}

describe("worker /metrics", () => {
  it("shows every series at zero before the first delivery, with Node's metrics", async () => {
    const text = await scrape();
    for (const kind of ["event", "cron"]) {
      for (const outcome of ["sent", "retry", "failed"]) {
        expect(sample(text, "punctual_deliveries_total", { kind, outcome })).toBe(0);
      }
      for (const decision of ["stepped_aside", "taken_over"]) {
        expect(sample(text, "punctual_delivery_owner_decisions_total", { kind, decision })).toBe(0);
      }
      expect(sample(text, "punctual_delivery_lateness_seconds_count", { kind })).toBe(0);
      expect(sample(text, "punctual_delivery_attempt_duration_seconds_count", { kind })).toBe(0);
    }
    // Buckets from 1 ms to 60 s.
    for (const bound of LATENESS_BUCKETS) {
      expect(sample(text, "punctual_delivery_lateness_seconds_bucket", { kind: "event", le: String(bound) })).toBe(0);
    }
    for (const gauge of [
      "punctual_prepared_jobs",
      "punctual_attempts_waiting",
      "punctual_attempts_in_flight",
      "punctual_capped_origins",
    ]) {
      expect(sample(text, gauge)).toBe(0);
    }
    expect(sample(text, "punctual_attempt_record_lag_seconds_count", { kind: "event" })).toBe(0);
    expect(sample(text, "process_cpu_user_seconds_total")).toBeGreaterThan(0);
    expect(text).toContain("nodejs_heap_size_used_bytes");
  });

  it("counts a sent and a failed event by outcome and observes each first attempt's lateness", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const scheduledTime = new Date(Date.now() + 1_200);
    const sent = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime,
    });
    const failed = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url.replace("/hook", "/fail"),
      scheduledTime,
    });
    await expect.poll(() => statusOf(context, sent.id)).toBe("Sent");
    await expect.poll(() => statusOf(context, failed.id)).toBe("Failed To Send");

    const text = await scrape();
    const deliveries = (outcome: string) => sample(text, "punctual_deliveries_total", { kind: "event", outcome });
    // RETRY_DELAYS_MS=100: the failing event is tried twice, a retry then the final failure.
    expect([deliveries("sent"), deliveries("retry"), deliveries("failed")]).toEqual([1, 1, 1]);
    expect(sample(text, "punctual_delivery_attempt_duration_seconds_count", { kind: "event" })).toBe(3);

    // Lateness is observed once per delivery (first attempts only), never negative, and small.
    const lateness = (name: string, labels: Record<string, string> = {}) =>
      sample(text, `punctual_delivery_lateness_seconds_${name}`, { kind: "event", ...labels });
    expect(lateness("count")).toBe(2);
    expect(lateness("bucket", { le: "1" })).toBe(2);
    // Its sum is what the first attempts' history rows say: attempt start − scheduled time.
    const firstAttempts = await context.db.eventAttempt.findMany({
      where: { eventId: { in: [sent.id, failed.id] }, attempt: 1 },
    });
    expect(firstAttempts).toHaveLength(2);
    const expectedSeconds =
      firstAttempts.reduce((sum, attempt) => sum + attempt.at.getTime() - scheduledTime.getTime(), 0) / 1000;
    expect(expectedSeconds).toBeGreaterThanOrEqual(0);
    expect(lateness("sum")).toBeCloseTo(expectedSeconds, 3);
    const [deliveredAt] = receiver.deliveriesOf(sent.id).map((delivery) => delivery.at);
    expect(deliveredAt).toBeGreaterThanOrEqual(scheduledTime.getTime());
    console.info(
      `event lateness: ${lateness("count")} observations, sum ${((lateness("sum") ?? 0) * 1000).toFixed(1)} ms, ` +
        `≤ 10 ms: ${lateness("bucket", { le: "0.01" })}, ≤ 100 ms: ${lateness("bucket", { le: "0.1" })}`,
    );
  });

  it("shows an event prepared ahead of its time as a prepared job until it is delivered, and its record lag", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    // Handed over PREPARE_AHEAD_MS (30 s) early: held in memory, still Pending, until its time.
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(Date.now() + 2_500),
    });

    await expect.poll(async () => sample(await scrape(), "punctual_prepared_jobs"), { timeout: 5_000 }).toBe(1);
    expect(await statusOf(context, event.id)).toBe("Pending");
    expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
    await expect.poll(() => statusOf(context, event.id)).toBe("Sent");
    const text = await scrape();
    expect(sample(text, "punctual_prepared_jobs")).toBe(0);
    // The attempt's row was committed once, well within a second of the answer.
    expect(sample(text, "punctual_attempt_record_lag_seconds_count", { kind: "event" })).toBe(1);
    expect(sample(text, "punctual_attempt_record_lag_seconds_bucket", { kind: "event", le: "1" })).toBe(1);
  });

  it("counts cron runs under kind=cron", async () => {
    const cronJob = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination: receiver.url, payload: "{}" },
      new Date(),
      10,
    );
    // A per-second pattern straight on the scheduler, so a run comes within a second.
    const cronQueue = await fireEverySecond(context, cronJob.id);
    await expect
      .poll(() => context.db.cronRun.count({ where: { cronJobId: cronJob.id, status: "Sent" } }))
      .toBeGreaterThanOrEqual(1);
    await cronQueue.removeJobScheduler(cronSchedulerId(cronJob.id));
    await expect
      .poll(() => context.db.cronRun.count({ where: { cronJobId: cronJob.id, status: { not: "Sent" } } }))
      .toBe(0);

    const runs = await context.db.cronRun.count({ where: { cronJobId: cronJob.id } });
    const text = await scrape();
    expect(sample(text, "punctual_deliveries_total", { kind: "cron", outcome: "sent" })).toBe(runs);
    expect(sample(text, "punctual_delivery_lateness_seconds_count", { kind: "cron" })).toBe(runs);
    expect(sample(text, "punctual_delivery_lateness_seconds_bucket", { kind: "cron", le: "5" })).toBe(runs);
    await cronQueue.close();
  });
});
