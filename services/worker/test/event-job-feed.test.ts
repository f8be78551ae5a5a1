import { eventJobId } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { preparedJobs } from "../../../test/support/prometheus.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";
import type { DeliveryWorker } from "../src/worker.ts";

// The feed of event jobs (services/worker/src/events/event-job-feed.ts): a worker takes event jobs
// itself, keeps their locks while it holds them, holds at most WORKER_PREPARED_JOBS at once, and
// completes each job after its delivery. Locks here last JOB_LOCK_MS = 1 s, so holding a job for a
// few seconds takes several renewals.

const PREPARED_AT_MOST = 5;

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;

beforeAll(async () => {
  ({ context, org, receiver, worker } = await createDeliveryContext({
    JOB_LOCK_MS: "1000",
    WORKER_PREPARED_JOBS: String(PREPARED_AT_MOST),
    PREPARE_AHEAD_MS: "30000",
    CLAIM_LEAD_MS: "1000",
  }));
});

afterAll(() => context?.close());

const lockKey = (eventId: string) => `${context.config.QUEUE_PREFIX}:events:${eventJobId(eventId)}:lock`;
const jobOf = (eventId: string) => createTestApiDeps(context).queue.getJob(eventJobId(eventId));

/** The worker's `punctual_prepared_jobs` gauge. */
const heldJobs = () => preparedJobs(worker.healthPort);

async function schedule(scheduledTime: Date) {
  return scheduleEvent(context, createTestApiDeps(context).deps.eventQueue, {
    orgId: org.orgId,
    destination: `${receiver.url}?case=${Math.random()}`,
    scheduledTime,
  });
}

describe("the event job feed", () => {
  it("keeps the lock of a job it holds for several lock lengths: the job never stalls, and is completed once sent", async () => {
    const event = await schedule(new Date(Date.now() + 4_000));
    await expect.poll(async () => (await jobOf(event.id))?.getState()).toBe("active");
    const token = await context.redis.get(lockKey(event.id));
    expect(token).toBeTruthy();
    // Held ~3 s with a 1 s lock: the same lock (same token) renewed all along, never expired.
    while (Date.now() < event.scheduledTime.getTime() - 200) {
      expect(await context.redis.get(lockKey(event.id))).toBe(token);
      expect(await context.redis.pttl(lockKey(event.id))).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await expect.poll(() => statusOf(context, event.id)).toBe("Sent");
    expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
    await expect.poll(async () => (await jobOf(event.id))?.getState()).toBe("completed");
    expect((await jobOf(event.id))?.stalledCounter).toBe(0);
  });

  it("holds at most WORKER_PREPARED_JOBS events: the rest wait in Redis, and each is sent once as room frees", async () => {
    const scheduledTime = new Date(Date.now() + 3_000);
    const events = [];
    for (let i = 0; i < PREPARED_AT_MOST + 7; i++) events.push(await schedule(scheduledTime));
    const queue = createTestApiDeps(context).queue;
    await expect.poll(heldJobs).toBe(PREPARED_AT_MOST);
    expect(await queue.getActiveCount()).toBe(PREPARED_AT_MOST);
    expect(await queue.getWaitingCount()).toBe(7);
    for (const event of events) await expect.poll(() => statusOf(context, event.id)).toBe("Sent");
    for (const event of events) expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
  });

  it("drops a prepared copy whose lock was lost; the job, taken again, delivers its event once, on time, and completes", async () => {
    const event = await schedule(new Date(Date.now() + 5_000));
    await expect.poll(async () => (await jobOf(event.id))?.getState()).toBe("active");
    const token = await context.redis.get(lockKey(event.id));
    // As if Redis had lost the lock: the renewal fails, the stalled check puts the job back in the
    // queue, and the feed takes it again under a new lock.
    await context.redis.del(lockKey(event.id));
    await expect.poll(() => context.redis.get(lockKey(event.id))).not.toBe(token);
    await expect.poll(() => context.redis.get(lockKey(event.id))).toBeTruthy();
    expect(await heldJobs()).toBe(1);
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const deliveries = receiver.deliveriesOf(event.id);
    expect(deliveries).toHaveLength(1);
    expect((deliveries[0]?.at ?? 0) - event.scheduledTime.getTime()).toBeGreaterThanOrEqual(0);
    expect((deliveries[0]?.at ?? 0) - event.scheduledTime.getTime()).toBeLessThan(1_000);
    expect((await jobOf(event.id))?.stalledCounter).toBe(1);
    await expect.poll(async () => (await jobOf(event.id))?.getState()).toBe("completed");
  });
});
