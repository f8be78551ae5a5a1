import { AppError, type Config, type Logger, type Redis } from "@punctual/core";
import type { Response } from "express";
import { createCounter, secondsLeft } from "./counter.ts";

// Test deliveries (POST /api/events/test) are HTTP requests the API itself sends, right away, to a
// destination of the caller's choosing and outside the monthly quota: each organization gets its
// own small budget of them (TEST_DELIVERIES_PER_MINUTE), on top of the request limit that every API
// call counts against. A fixed one-minute window per organization in Redis, shared by every API
// instance, failing open like the request limiter (the destination rules still apply).

export const TOO_MANY_TEST_DELIVERIES = "Too many test deliveries, please try again later";

const WINDOW_SECONDS = 60;

export interface TestDeliveryLimitDeps {
  config: Pick<Config, "TEST_DELIVERIES_PER_MINUTE" | "QUEUE_PREFIX">;
  redis: Redis;
}

export interface TestDeliveryLimit {
  /** Takes one test delivery of the organization's budget, or throws 429 (with Retry-After set). */
  take(orgId: string, res: Response, log: Logger): Promise<void>;
}

export function createTestDeliveryLimit(deps: TestDeliveryLimitDeps): TestDeliveryLimit {
  const counter = createCounter({
    redis: deps.redis,
    keyPrefix: `${deps.config.QUEUE_PREFIX}:test-deliveries`,
    points: deps.config.TEST_DELIVERIES_PER_MINUTE,
    windowSeconds: WINDOW_SECONDS,
    // No block beyond the window: the budget comes back when the minute ends.
    blockSeconds: 0,
  });
  return {
    async take(orgId, res, log) {
      const verdict = await counter.consume(`org:${orgId}`, log);
      if (verdict?.kind !== "refused") return;
      res.setHeader("Retry-After", String(Math.max(1, secondsLeft(verdict.result))));
      throw new AppError("TOO_MANY_REQUESTS", TOO_MANY_TEST_DELIVERIES);
    },
  };
}
