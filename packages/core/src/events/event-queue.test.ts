import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../../../../test/support/context.ts";
import { fixedClock } from "../clock.ts";
import { type EventJobData, QUEUE_NAMES } from "../queues.ts";
import { createRedis } from "../redis.ts";
import { createEventQueue } from "./event-queue.ts";

// Jobs scheduled in the same turn of the event loop go to Redis in one addBulk: each event must
// still get its own delayed job, and each call its own outcome.

const NOW = new Date("2030-01-05T00:00:00.000Z");
const clock = fixedClock(NOW);

let context: TestContext;
let queue: Queue<EventJobData>;

beforeAll(async () => {
  context = await createTestContext();
  queue = new Queue<EventJobData>(QUEUE_NAMES.events, {
    connection: context.redis,
    prefix: context.config.QUEUE_PREFIX,
  });
  context.queues.push(queue);
});
afterAll(() => context.close());

// Every one beyond the prepare window (30 s), so every job waits as a delayed job, and within the
// enqueue horizon (1 h) for n < 59, so every event gets one.
const event = (n: number) => ({ id: `evt_batch${n}`, scheduledTime: new Date(NOW.getTime() + (n + 1) * 60_000) });

describe("createEventQueue", () => {
  it("puts a delayed job per event when many are scheduled at once", async () => {
    const eventQueue = createEventQueue(queue, context.config, clock);
    const events = Array.from({ length: 25 }, (_, n) => event(n));
    await Promise.all([...events, events[0] as (typeof events)[0]].map((e) => eventQueue.schedule(e)));

    expect(await queue.getDelayedCount()).toBe(events.length);
    for (const e of events) {
      const job = await queue.getJob(`event-${e.id}`);
      expect(job?.data).toEqual({ eventId: e.id });
      // Due to a worker PREPARE_AHEAD_MS before the event's time.
      expect(job?.opts.delay).toBe(e.scheduledTime.getTime() - context.config.PREPARE_AHEAD_MS - NOW.getTime());
      expect(await job?.isDelayed()).toBe(true);
    }
  });

  it("fails each call of a batch that Redis refuses", async () => {
    const connection = createRedis(context.config.REDIS_URL);
    const closed = new Queue<EventJobData>(QUEUE_NAMES.events, {
      connection,
      prefix: context.config.QUEUE_PREFIX,
    });
    await closed.waitUntilReady();
    await connection.quit();
    const eventQueue = createEventQueue(closed, context.config, clock);
    const outcomes = await Promise.allSettled([40, 41, 42].map((n) => eventQueue.schedule(event(n))));
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(await queue.getJob("event-evt_batch40")).toBeUndefined();
    await closed.close().catch(() => {});
  });

  it("adds no job for an event beyond the enqueue horizon, and removes the job of one moved beyond it", async () => {
    const eventQueue = createEventQueue(queue, context.config, clock);
    const beyond = event(90);
    await eventQueue.schedule(beyond);
    await eventQueue.scheduleMany([event(91)]);
    expect(await queue.getJob("event-evt_batch90")).toBeUndefined();
    expect(await queue.getJob("event-evt_batch91")).toBeUndefined();

    const moved = event(50);
    await eventQueue.schedule(moved);
    expect(await queue.getJob("event-evt_batch50")).toBeDefined();
    await eventQueue.schedule({ id: moved.id, scheduledTime: beyond.scheduledTime }, { replace: true });
    expect(await queue.getJob("event-evt_batch50")).toBeUndefined();
  });
});
