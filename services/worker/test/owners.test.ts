import { type Config, createFailFastRedis, fixedClock, workerHeartbeatsLeft } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../../../test/support/context.ts";
import { createDeliveryOwners, longestDeliveryMs } from "../src/delivery/owners.ts";
import { createHeartbeat } from "../src/heartbeat.ts";

// Whether a worker may take over a Queued event's delivery from the worker that claimed it, read
// from the owners' real heartbeats in Redis.

let context: TestContext;

beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

const config: Pick<Config, "CLAIM_LEAD_MS" | "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS" | "PREPARE_AHEAD_MS"> = {
  CLAIM_LEAD_MS: 1_000,
  PREPARE_AHEAD_MS: 30_000,
  DELIVERY_TIMEOUT_MS: 10_000,
  RETRY_DELAYS_MS: [3_000, 5_000, 10_000],
};
const now = new Date("2026-11-26T12:00:00.000Z");

function ownersOf(self: string) {
  return createDeliveryOwners({
    self,
    clock: fixedClock(now),
    logger: context.logger,
    config,
    heartbeatsLeft: (ids) => workerHeartbeatsLeft(context.redis, context.config.QUEUE_PREFIX, ids),
  });
}

/** Another worker's heartbeat (started by the test). */
const ownerHeartbeat = () =>
  createHeartbeat({
    redis: context.redis,
    prefix: context.config.QUEUE_PREFIX,
    clock: fixedClock(now),
    logger: context.logger,
  });

describe("delivery owners", () => {
  it("the longest delivery is the claim lead, every attempt timing out, every retry held up to the prepare window and 60 s of slot waits", () => {
    expect(longestDeliveryMs(config)).toBe(1_000 + 4 * 10_000 + 3 * 30_000 + 60_000);
    // A delivery's own policy: its timeout and its number of attempts.
    const policy = { timeoutMs: 2_000, retry: { delaysMs: [100], maxAgeMs: null, stopOnStatus: [] } };
    expect(longestDeliveryMs(config, policy)).toBe(1_000 + 2 * 2_000 + 30_000 + 60_000);
  });

  it("keeps a live owner's delivery, and looks again after 5 s or just after its heartbeat would expire", async () => {
    const owner = ownerHeartbeat();
    await owner.start();
    try {
      const since = new Date(now.getTime() - 10_000);
      // Just renewed (15 s left): looked at again after 5 s.
      expect(await ownersOf("me").holdLeftMs({ workerId: owner.id, since })).toBe(5_000);
      // About to expire (the owner died 14 s ago): looked at again just after it has.
      await context.redis.pexpire(`${context.config.QUEUE_PREFIX}:worker:${owner.id}`, 1_000);
      const left = await ownersOf("me").holdLeftMs({ workerId: owner.id, since });
      expect(left).toBeGreaterThan(900);
      expect(left).toBeLessThanOrEqual(1_100);
    } finally {
      await owner.stop();
    }
    // Stopped (its heartbeat withdrawn): taken over now.
    expect(await ownersOf("me").holdLeftMs({ workerId: owner.id, since: now })).toBe(0);
  });

  it("takes over at once a delivery claimed by no recorded worker, by itself, or longer ago than any delivery lasts", async () => {
    const owner = ownerHeartbeat();
    await owner.start();
    try {
      const owners = ownersOf(owner.id);
      // Claimed before owners were recorded.
      expect(await owners.holdLeftMs({ workerId: null, since: now })).toBe(0);
      // Its own claim, which it no longer holds.
      expect(await owners.holdLeftMs({ workerId: owner.id, since: now })).toBe(0);
      // Another live worker that has held it too long let go without ending it.
      const tooLongAgo = new Date(now.getTime() - longestDeliveryMs(config) - 1);
      expect(await ownersOf("me").holdLeftMs({ workerId: owner.id, since: tooLongAgo })).toBe(0);
      expect(await ownersOf("me").holdLeftMs({ workerId: owner.id, since: now })).toBe(5_000);
    } finally {
      await owner.stop();
    }
  });

  it("keeps the delivery with its owner, and looks again after 5 s, when Redis cannot say whether it lives", async () => {
    const dead = createFailFastRedis("redis://127.0.0.1:1");
    dead.on("error", () => {});
    try {
      const owners = createDeliveryOwners({
        self: "me",
        clock: fixedClock(now),
        logger: context.logger,
        config,
        heartbeatsLeft: (ids) => workerHeartbeatsLeft(dead, context.config.QUEUE_PREFIX, ids),
      });
      expect(await owners.holdLeftMs({ workerId: "someone", since: now })).toBe(5_000);
    } finally {
      dead.disconnect();
    }
  });

  it("decides once: a live owner's delivery is stepped aside from, a gone owner's taken over", async () => {
    const owner = ownerHeartbeat();
    await owner.start();
    try {
      expect(await ownersOf("me").decide({ workerId: owner.id, since: now })).toEqual({
        kind: "stepAside",
        forMs: 5_000,
      });
      // Its own claim, which it no longer holds: taken over, but not from another worker.
      expect(await ownersOf(owner.id).decide({ workerId: owner.id, since: now })).toEqual({
        kind: "takeOver",
        fromAnother: false,
      });
    } finally {
      await owner.stop();
    }
    expect(await ownersOf("me").decide({ workerId: owner.id, since: now })).toEqual({
      kind: "takeOver",
      fromAnother: true,
    });
  });
});
