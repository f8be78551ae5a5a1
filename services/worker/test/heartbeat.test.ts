import { HEARTBEAT_INTERVAL_MS, HEARTBEAT_TTL_MS, readServiceStatus, systemClock } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../../../test/support/context.ts";
import { createHeartbeat } from "../src/heartbeat.ts";

// The worker's heartbeat in Redis: set at start with a 15 s expiry, renewed every 5 s, removed at
// a graceful stop, and what the service health lists as the live workers.

let context: TestContext;

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

const heartbeatOf = (id: string) => `${context.config.QUEUE_PREFIX}:worker:${id}`;
const newHeartbeat = () =>
  createHeartbeat({
    redis: context.redis,
    prefix: context.config.QUEUE_PREFIX,
    clock: systemClock,
    logger: context.logger,
  });

describe("the worker heartbeat", () => {
  it("announces the worker at start with a 15 s expiry, and lists it as live", async () => {
    const heartbeat = newHeartbeat();
    await heartbeat.start();
    try {
      const stored = JSON.parse((await context.redis.get(heartbeatOf(heartbeat.id))) ?? "null");
      expect(stored).toEqual({
        id: heartbeat.id,
        host: expect.any(String),
        pid: process.pid,
        startedAt: expect.any(String),
        lastSeenAt: stored?.startedAt,
      });
      const ttl = await context.redis.pttl(heartbeatOf(heartbeat.id));
      expect(ttl).toBeGreaterThan(HEARTBEAT_TTL_MS - 2_000);
      expect(ttl).toBeLessThanOrEqual(HEARTBEAT_TTL_MS);
      const { workers } = await readServiceStatus(context.redis, context.config.QUEUE_PREFIX, new Date());
      expect(workers).toContainEqual(stored);
    } finally {
      await heartbeat.stop();
    }
  });

  it("renews lastSeenAt every 5 s and keeps startedAt", async () => {
    const heartbeat = newHeartbeat();
    await heartbeat.start();
    try {
      const first = JSON.parse((await context.redis.get(heartbeatOf(heartbeat.id))) ?? "{}");
      await expect
        .poll(async () => JSON.parse((await context.redis.get(heartbeatOf(heartbeat.id))) ?? "{}").lastSeenAt, {
          timeout: HEARTBEAT_INTERVAL_MS + 3_000,
          interval: 250,
        })
        .not.toBe(first.lastSeenAt);
      const renewed = JSON.parse((await context.redis.get(heartbeatOf(heartbeat.id))) ?? "{}");
      expect(renewed.startedAt).toBe(first.startedAt);
      expect(Date.parse(renewed.lastSeenAt) - Date.parse(first.lastSeenAt)).toBeGreaterThanOrEqual(
        HEARTBEAT_INTERVAL_MS - 100,
      );
    } finally {
      await heartbeat.stop();
    }
  });

  it("removes the heartbeat at a graceful stop, so the worker is no longer listed", async () => {
    const heartbeat = newHeartbeat();
    await heartbeat.start();
    await heartbeat.stop();
    expect(await context.redis.exists(heartbeatOf(heartbeat.id))).toBe(0);
    const { workers } = await readServiceStatus(context.redis, context.config.QUEUE_PREFIX, new Date());
    expect(workers.map((worker) => worker.id)).not.toContain(heartbeat.id);
  });

  it("drops a worker whose heartbeat expired without a stop (a crash)", async () => {
    const heartbeat = newHeartbeat();
    await heartbeat.start();
    try {
      // What the expiry does to a worker that died: its heartbeat is gone, its id still announced.
      await context.redis.del(heartbeatOf(heartbeat.id));
      const { workers } = await readServiceStatus(context.redis, context.config.QUEUE_PREFIX, new Date());
      expect(workers.map((worker) => worker.id)).not.toContain(heartbeat.id);
      expect(await context.redis.sismember(`${context.config.QUEUE_PREFIX}:workers`, heartbeat.id)).toBe(0);
    } finally {
      await heartbeat.stop();
    }
  });
});
