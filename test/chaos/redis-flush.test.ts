import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { scheduleBurst } from "../support/events.ts";
import { type OwnRedis, startOwnRedis } from "../support/own-servers.ts";
import { type Receiver, startTestReceiver } from "../support/receiver.ts";
import { startTestWorker } from "../support/worker.ts";
import { countDeliveries } from "./chaos-report.ts";

// Chaos 1: Redis loses everything (FLUSHALL) while 1000 events wait. Postgres holds them, so the
// reconciler queues them again; flushed earlier than their time by more than the reconcile
// interval, they are still delivered on time, each once.

let redis: OwnRedis;
let context: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  redis = await startOwnRedis();
  context = await createTestContext({
    REDIS_URL: redis.url,
    WORKER_HEALTH_PORT: "0",
    RECONCILE_INTERVAL_MS: "1000",
    MAX_EVENTS_PER_MONTH: "100000",
  });
  receiver = await startTestReceiver(context);
  await startTestWorker(context);
});

afterAll(async () => {
  await context?.close();
  await redis?.stop();
});

it("delivers 1000 pending events after a FLUSHALL, each once and on time", async () => {
  const org = await createTestOrganization(context);
  const {
    deps: { eventQueue },
    queue,
  } = createTestApiDeps(context);
  const due = new Date(Date.now() + 10_000);
  const events = await scheduleBurst(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: due,
    count: 1000,
  });
  // Due within PREPARE_AHEAD_MS: the worker already holds the jobs, prepared.
  await expect.poll(() => queue.getJobCountByTypes("delayed", "waiting", "active")).toBe(1000);

  const flushedAt = Date.now();
  await redis.flushAll();
  // The flush happened more than a reconcile interval before the events' time...
  expect(due.getTime() - Date.now()).toBeGreaterThan(3_000);
  // ...so the reconciler puts every job back before the worker would have fired it: the flush
  // costs no event any time.
  // (The reconciler may refill the queue within moments of the flush, so what is checked is that
  // every job is a new one, made after it.)
  const jobsMadeAfterFlush = async () =>
    (await queue.getJobs(["delayed", "waiting", "active", "completed"], 0, -1)).filter(
      (job) => job.timestamp >= flushedAt,
    ).length;
  await expect.poll(jobsMadeAfterFlush, { timeout: 10_000 }).toBe(1000);
  expect(Date.now()).toBeLessThan(due.getTime() - context.config.CLAIM_LEAD_MS);

  await expect
    .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), { timeout: 30_000 })
    .toBe(1000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  const counts = countDeliveries("redis FLUSHALL before 1000 due events", receiver, events, 1000);
  expect(counts.lost).toBe(0);
  expect(counts.duplicated).toBe(0);
  // Never early. How late the last of a burst of 1000 on one worker is, is a matter of throughput,
  // measured in bench/RESULTS.md, not of the flush.
  const firstArrivals = events.map((event) => receiver.deliveriesOf(event.id)[0]?.at ?? 0);
  expect(Math.min(...firstArrivals)).toBeGreaterThanOrEqual(due.getTime());
}, 60_000);
