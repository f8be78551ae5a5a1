import { createEvent, type EventRecord, eventJobId, fixedClock } from "@punctual/core";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  deleteKeys,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { horizonCursorKey } from "../src/maintenance/horizon-feeder.ts";
import { createReconciler } from "../src/maintenance/reconciler.ts";
import { createWorker } from "../src/worker.ts";

// Only the near future holds jobs in Redis: an event due beyond ENQUEUE_HORIZON_MS (8 s here) is in
// Postgres alone until the reconciler queues it as it comes within the horizon, PREPARE_AHEAD_MS
// (2 s) and several reconciler runs (500 ms apart) before its job is due.

const HORIZON_MS = 8_000;
const PREPARE_AHEAD_MS = 2_000;

let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    ENQUEUE_HORIZON_MS: String(HORIZON_MS),
    PREPARE_AHEAD_MS: String(PREPARE_AHEAD_MS),
    RECONCILE_INTERVAL_MS: "500",
  });
  org = await createTestOrganization(context);
  receiver = await startTestReceiver(context);
});

afterAll(() => context?.close());

// The tests below move the reconciler's clock ahead: each starts with the feeder's cursor unset, as
// after a first start.
beforeEach(async () => {
  await context.redis.del(horizonCursorKey(context.config.QUEUE_PREFIX));
});

/** An event queue, reconciler and BullMQ queue that all read one clock, moved by the test. */
function atClock(start = new Date(), settings: Partial<TestContext["config"]> = {}) {
  const clock = fixedClock(start);
  const { deps, queue, cronQueue } = createTestApiDeps(context, clock);
  const reconcile = createReconciler({
    db: context.db,
    clock,
    config: { ...context.config, ...settings },
    eventQueues: queue,
    cronQueue,
    eventQueue: deps.eventQueue,
    cronJobSchedulers: deps.cronJobSchedulers,
    logger: context.logger,
    redis: context.redis,
  });
  const jobOf = (event: { id: string }) => queue.getJob(eventJobId(event.id));
  return { clock, eventQueue: deps.eventQueue, reconcile, queue, jobOf };
}

/** A Pending event in Postgres only, as one created beyond the horizon is. */
async function storedEvent(scheduledTime: Date): Promise<EventRecord> {
  const { event } = await createEvent(
    context.db,
    { orgId: org.orgId, payload: "p", destination: receiver.url, scheduledTime },
    new Date(),
    1000,
  );
  return event;
}

/** When a job made at `now` is handed to a worker (BullMQ stamps jobs with the real time). */
const dueOf = (job: { opts: { delay?: number } } | undefined, now: Date) =>
  job === undefined ? undefined : now.getTime() + (job.opts.delay ?? 0);

describe("the event queue", () => {
  it("adds no job for an event created beyond the horizon, and a delayed one for an event inside it", async () => {
    const { clock, eventQueue, jobOf } = atClock();
    const now = Date.now();
    const beyond = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(now + HORIZON_MS + 5_000),
    });
    const inside = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(now + HORIZON_MS - 2_000),
    });
    expect(await jobOf(beyond)).toBeUndefined();
    const job = await jobOf(inside);
    expect(await job?.isDelayed()).toBe(true);
    expect(dueOf(job, clock.now())).toBe(inside.scheduledTime.getTime() - PREPARE_AHEAD_MS);
    expect(await statusOf(context, beyond.id)).toBe("Pending");
  });

  it("removes the job of an event moved out beyond the horizon, and queues it again when moved back in", async () => {
    const { clock, eventQueue, jobOf } = atClock();
    const event = await storedEvent(new Date(Date.now() + 5_000));
    await eventQueue.schedule(event);
    expect(await jobOf(event)).toBeDefined();

    await eventQueue.schedule({ id: event.id, scheduledTime: new Date(Date.now() + 60_000) }, { replace: true });
    expect(await jobOf(event)).toBeUndefined();

    const movedIn = new Date(Date.now() + 6_000);
    await eventQueue.schedule({ id: event.id, scheduledTime: movedIn }, { replace: true });
    expect(dueOf(await jobOf(event), clock.now())).toBe(movedIn.getTime() - PREPARE_AHEAD_MS);
  });

  it("skips the events beyond the horizon in a bulk add", async () => {
    const { eventQueue, jobOf } = atClock();
    const near = await storedEvent(new Date(Date.now() + 4_000));
    const far = await storedEvent(new Date(Date.now() + 3_600_000));
    await eventQueue.scheduleMany([near, far]);
    expect(await jobOf(near)).toBeDefined();
    expect(await jobOf(far)).toBeUndefined();
  });
});

describe("the reconciler", () => {
  it("queues an event once as it comes within the horizon, and not before", async () => {
    const start = new Date();
    const { clock, reconcile, jobOf } = atClock(start);
    const event = await storedEvent(new Date(start.getTime() + 30_000));

    await reconcile();
    expect(await jobOf(event)).toBeUndefined();

    // 5 s inside the horizon: queued, its job due PREPARE_AHEAD_MS before the event.
    clock.set(new Date(event.scheduledTime.getTime() - HORIZON_MS + 5_000));
    const entered = await reconcile();
    expect(entered.eventsFed).toBeGreaterThanOrEqual(1);
    const job = await jobOf(event);
    expect(await job?.isDelayed()).toBe(true);
    expect(dueOf(job, clock.now())).toBe(event.scheduledTime.getTime() - PREPARE_AHEAD_MS);

    // The cursor has passed it: the next run reads only what entered since.
    clock.advance(500);
    expect((await reconcile()).eventsFed).toBe(0);
  });

  it("pages through more events than one batch entering the horizon at once", async () => {
    const start = new Date();
    const { clock, reconcile, jobOf } = atClock(start, { RECONCILE_BATCH_SIZE: 10 });
    const due = new Date(start.getTime() + 60_000);
    const many = await Promise.all(Array.from({ length: 25 }, () => storedEvent(due)));
    clock.set(new Date(due.getTime() - HORIZON_MS + 3_000));
    expect((await reconcile()).eventsFed).toBeGreaterThanOrEqual(many.length);
    const jobs = await Promise.all(many.map(jobOf));
    expect(jobs.filter((job) => job !== undefined)).toHaveLength(many.length);
  });

  it("puts back a job lost inside the horizon, and gives none to an event beyond it", async () => {
    const start = new Date();
    const { reconcile, jobOf, queue } = atClock(start);
    const inside = await storedEvent(new Date(start.getTime() + 5_000));
    const beyond = await storedEvent(new Date(start.getTime() + HORIZON_MS + 20_000));
    await reconcile();
    expect(await jobOf(inside)).toBeDefined();
    expect(await jobOf(beyond)).toBeUndefined();

    // The job is lost after the feeder passed the event: the missing-job check repairs it.
    await queue.remove(eventJobId(inside.id));
    const report = await reconcile();
    expect(report.eventsFed).toBe(0);
    expect(report.eventsQueued).toBeGreaterThanOrEqual(1);
    expect(await jobOf(inside)).toBeDefined();
    // Beyond the horizon no job is the normal state, not something to repair.
    expect(await jobOf(beyond)).toBeUndefined();
  });

  it("queues again every Pending event within the horizon after Redis lost everything, and none beyond", async () => {
    const start = new Date();
    const { reconcile, jobOf } = atClock(start);
    // Farther than the missing-job check looks (PREPARE_AHEAD_MS + 3 runs + 10 s is capped by the
    // horizon), but inside the horizon.
    const inside = await storedEvent(new Date(start.getTime() + HORIZON_MS - 1_500));
    const beyond = await storedEvent(new Date(start.getTime() + HORIZON_MS + 1_000));
    await reconcile();
    expect(await jobOf(inside)).toBeDefined();

    await deleteKeys(context.redis, `${context.config.QUEUE_PREFIX}:*`);
    expect(await jobOf(inside)).toBeUndefined();
    await reconcile();
    expect(await jobOf(inside)).toBeDefined();
    expect(await jobOf(beyond)).toBeUndefined();
  });
});

describe("with a running worker", () => {
  it("delivers on time the events that were created beyond the horizon and crossed it", async () => {
    const { eventQueue, jobOf } = atClock();
    // Queued by the feeder at about due − 7 s, taken by the worker at due − 2 s, sent at due.
    const due = new Date(Date.now() + HORIZON_MS + 4_000);
    const events = await Promise.all(
      Array.from({ length: 20 }, () =>
        scheduleEvent(context, eventQueue, { orgId: org.orgId, destination: receiver.url, scheduledTime: due }),
      ),
    );
    for (const event of events) expect(await jobOf(event)).toBeUndefined();

    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    try {
      let queuedAt: number | undefined;
      await expect
        .poll(
          async () => {
            const jobs = await Promise.all(events.map((event) => jobOf(event)));
            if (jobs.every((job) => job !== undefined)) queuedAt ??= Date.now();
            return queuedAt !== undefined;
          },
          { timeout: 10_000 },
        )
        .toBe(true);
      // Within the horizon, and well before the worker's prepare window opens.
      expect(queuedAt).toBeGreaterThanOrEqual(due.getTime() - HORIZON_MS);
      expect(queuedAt).toBeLessThan(due.getTime() - PREPARE_AHEAD_MS - 1_000);

      await expect
        .poll(() => context.db.event.count({ where: { id: { in: events.map((e) => e.id) }, status: "Sent" } }), {
          timeout: 20_000,
        })
        .toBe(events.length);
      const arrivals = events.map((event) => receiver.deliveriesOf(event.id));
      for (const deliveries of arrivals) expect(deliveries).toHaveLength(1);
      const lateness = arrivals.map((deliveries) => (deliveries[0]?.at ?? 0) - due.getTime());
      expect(Math.min(...lateness)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...lateness)).toBeLessThan(500);
    } finally {
      await worker.stop();
    }
  }, 40_000);
});
