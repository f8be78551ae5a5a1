import { createEventQueue, createFailFastRedis, type EventJobData, type EventQueue, QUEUE_NAMES } from "@punctual/core";
import { Queue } from "bullmq";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import type { ApiDeps } from "../src/app.ts";
import { createApp } from "../src/app.ts";
import { QUEUE_TIMEOUT_MS } from "../src/events/queueing.ts";

// The API and the delayed queue: a create within ENQUEUE_HORIZON_MS (1 h) puts a delayed job in
// Redis, one beyond it none (the reconciler queues it later), a cancel takes the job off, and a Redis
// outage never fails a request whose event is committed in Postgres.

const HOUR_MS = 60 * 60 * 1000;
const MINUTE_MS = 60 * 1000;

let context: TestContext;
let deps: ApiDeps;
let queue: Queue<EventJobData>;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  ({ deps, queue } = createTestApiDeps(context));
  org = await createTestOrganization(context);
});
afterAll(async () => {
  await queue.close();
  await context.close();
});

/** An event due in `minutes`: 30 is inside the default horizon of 1 h. */
const body = (minutes = 30) => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(Date.now() + minutes * MINUTE_MS).toISOString(),
});
const post = (app: ReturnType<typeof createApp>, key?: string, minutes?: number) => {
  const call = request(app).post("/api/events").set("x-api-key", org.apiKey).send(body(minutes));
  return key === undefined ? call : call.set("Idempotency-Key", key);
};
const statusInDb = async (id: string) =>
  (await context.db.$queryRaw<{ status: string }[]>`SELECT status FROM events WHERE id = ${id}`)[0]?.status;

describe("delayed jobs", () => {
  it("puts a delayed job on the queue at create and removes it at cancel", async () => {
    const app = createApp(deps);
    const created = await post(app);
    expect(created.status).toBe(200);
    const job = await queue.getJob(`event-${created.body.id}`);
    expect(job?.data).toEqual({ eventId: created.body.id });
    expect(await job?.isDelayed()).toBe(true);
    expect(job?.opts.delay).toBeGreaterThan(30 * MINUTE_MS - 60_000);

    const cancelled = await request(app)
      .put(`/api/events/${created.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ status: "Cancelled" });
    expect(cancelled.status).toBe(200);
    expect(await queue.getJob(`event-${created.body.id}`)).toBeUndefined();
  });

  it("adds no job for an event created beyond the enqueue horizon; the event is stored Pending", async () => {
    const app = createApp(deps);
    const created = await post(app, undefined, 5 * 60);
    expect(created.status).toBe(200);
    expect(await statusInDb(created.body.id)).toBe("Pending");
    expect(await queue.getJob(`event-${created.body.id}`)).toBeUndefined();
  });

  it("moves the job when the time changes within the horizon, and leaves it alone for other edits", async () => {
    const app = createApp(deps);
    const created = await post(app);
    const id = created.body.id as string;
    const later = new Date(Date.now() + 50 * MINUTE_MS);
    const moved = await request(app)
      .put(`/api/events/${id}`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: later.toISOString() });
    expect(moved.status).toBe(200);
    const job = await queue.getJob(`event-${id}`);
    expect(await job?.isDelayed()).toBe(true);
    expect((job?.timestamp ?? 0) + (job?.opts.delay ?? 0)).toBeGreaterThan(later.getTime() - 60_000);

    const edited = await request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey).send({ payload: "new" });
    expect(edited.status).toBe(200);
    expect((await queue.getJob(`event-${id}`))?.id).toBe(job?.id);
  });

  it("removes the job of an event moved beyond the horizon, and queues it again when moved back in", async () => {
    const app = createApp(deps);
    const created = await post(app);
    const id = created.body.id as string;
    const move = (at: Date) =>
      request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey).send({ scheduledTime: at.toISOString() });
    expect(await queue.getJob(`event-${id}`)).toBeDefined();

    expect((await move(new Date(Date.now() + 5 * HOUR_MS))).status).toBe(200);
    expect(await queue.getJob(`event-${id}`)).toBeUndefined();
    expect(await statusInDb(id)).toBe("Pending");

    const back = new Date(Date.now() + 10 * MINUTE_MS);
    expect((await move(back)).status).toBe(200);
    const job = await queue.getJob(`event-${id}`);
    expect(await job?.isDelayed()).toBe(true);
    expect((job?.timestamp ?? 0) + (job?.opts.delay ?? 0)).toBeGreaterThan(back.getTime() - 60_000);
  });

  it("does not queue again for an idempotent repeat", async () => {
    const calls: string[] = [];
    const counting: EventQueue = {
      schedule: (event, options) => {
        calls.push(event.id);
        return deps.eventQueue.schedule(event, options);
      },
      scheduleMany: (events) => deps.eventQueue.scheduleMany(events),
      unschedule: (id) => deps.eventQueue.unschedule(id),
      announceChange: (id) => deps.eventQueue.announceChange(id),
    };
    const app = createApp({ ...deps, eventQueue: counting });
    const sameBody = body();
    const send = () =>
      request(app).post("/api/events").set("x-api-key", org.apiKey).set("Idempotency-Key", "once").send(sameBody);
    const first = await send();
    const repeat = await send();
    expect(repeat.body.id).toBe(first.body.id);
    expect(calls).toEqual([first.body.id]);
  });
});

describe("with Redis unreachable", () => {
  it("still answers 200 and leaves the event Pending when queueing fails", async () => {
    const failing: EventQueue = {
      schedule: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379")),
      scheduleMany: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379")),
      unschedule: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379")),
      announceChange: () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379")),
    };
    const app = createApp({ ...deps, eventQueue: failing });
    const created = await post(app);
    expect(created.status).toBe(200);
    expect(created.body.status).toBe("Pending");
    expect(await statusInDb(created.body.id)).toBe("Pending");

    const cancelled = await request(app)
      .put(`/api/events/${created.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ status: "Cancelled" });
    expect(cancelled.status).toBe(200);
    expect(await statusInDb(created.body.id)).toBe("Cancelled");
  });

  // BullMQ waits for its connection to become ready before `add`, even on a fail-fast connection
  // without an offline queue: the event queue checks the connection first and fails at once.
  it("answers at once through a queue on a dead fail-fast connection", async () => {
    const dead = createFailFastRedis("redis://127.0.0.1:1");
    dead.on("error", () => {});
    const deadQueue = new Queue<EventJobData>(QUEUE_NAMES.events, {
      connection: dead,
      prefix: context.config.QUEUE_PREFIX,
    });
    deadQueue.on("error", () => {});
    try {
      const eventQueue = createEventQueue(deadQueue, context.config, deps.clock, () => dead.status === "ready");
      const app = createApp({ ...deps, eventQueue });
      const started = Date.now();
      const created = await post(app);
      expect(created.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(500);
      expect(await statusInDb(created.body.id)).toBe("Pending");
    } finally {
      await deadQueue.close().catch(() => {});
      dead.disconnect();
    }
  });

  it("stops waiting for a queue that never answers", async () => {
    const never = () => new Promise<void>(() => {});
    const hanging: EventQueue = { schedule: never, scheduleMany: never, unschedule: never, announceChange: never };
    const app = createApp({ ...deps, eventQueue: hanging });
    const started = Date.now();
    const created = await post(app);
    expect(created.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(QUEUE_TIMEOUT_MS + 1_000);
    expect(await statusInDb(created.body.id)).toBe("Pending");
  });
});
