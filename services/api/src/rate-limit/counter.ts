import { type Logger, type Redis, withTimeout } from "@punctual/core";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";

// One fixed-window counter per subject in Redis (rate-limiter-flexible's RateLimiterRedis), shared by
// every API instance. Redis trouble never takes the API down: when Redis cannot answer within a
// short time the caller is told nothing (undefined) and lets the request through (fail open); the
// outage is logged.

/** Longest wait for Redis before a request is let through uncounted. */
const STORE_TIMEOUT_MS = 500;
const STORE_TIMED_OUT = { error: new Error(`no answer within ${STORE_TIMEOUT_MS} ms`) };
/** While Redis is down every request would log; one line per this interval is enough. */
const FAIL_OPEN_LOG_INTERVAL_MS = 10_000;

export type Verdict = { kind: "allowed" | "refused"; result: RateLimiterRes };

export interface CounterOptions {
  redis: Redis;
  /** Redis keys are `<keyPrefix>:<subject>`. */
  keyPrefix: string;
  /** Points per window; the one that goes over starts a block. */
  points: number;
  windowSeconds: number;
  blockSeconds: number;
}

export interface Counter {
  readonly points: number;
  /** One point for `subject`; undefined when Redis did not answer in time. */
  consume(subject: string, log: Logger): Promise<Verdict | undefined>;
  /** The block `subject` is under, read without counting; undefined when none (or no answer). */
  block(subject: string, log: Logger): Promise<RateLimiterRes | undefined>;
  /** Blocks `subject` for `blockSeconds` from now. */
  startBlock(subject: string, log: Logger): Promise<void>;
}

/** Seconds until `result` ends, rounded up, as `Retry-After` and `RateLimit-Reset` want them. */
export const secondsLeft = (result: RateLimiterRes) => Math.max(0, Math.ceil(result.msBeforeNext / 1000));

export function createCounter(options: CounterOptions): Counter {
  const limiter = new RateLimiterRedis({
    storeClient: options.redis,
    keyPrefix: options.keyPrefix,
    points: options.points,
    duration: options.windowSeconds,
    blockDuration: options.blockSeconds,
    // The API's connection queues commands while Redis is away (BullMQ needs that); the limiter
    // must not wait for a reconnect, so it fails at once unless the connection is ready.
    rejectIfRedisNotReady: true,
  });
  let lastFailOpenLog = 0;

  /** `operation`'s outcome, or undefined (logged) when Redis failed or did not answer in time. */
  async function orFailOpen<T>(operation: Promise<T>, log: Logger): Promise<T | undefined> {
    const outcome = await withTimeout(
      operation.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      STORE_TIMEOUT_MS,
      STORE_TIMED_OUT,
    );
    if ("value" in outcome) return outcome.value;
    const now = Date.now();
    if (now - lastFailOpenLog >= FAIL_OPEN_LOG_INTERVAL_MS) {
      lastFailOpenLog = now;
      log.warn({ err: outcome.error }, "rate limiter unavailable; letting requests through uncounted");
    }
    return undefined;
  }

  return {
    points: options.points,
    consume: (subject, log) =>
      orFailOpen(
        limiter.consume(subject).then(
          (result): Verdict => ({ kind: "allowed", result }),
          (reason: unknown): Verdict => {
            // The library rejects with a RateLimiterRes when over the limit, with an Error when Redis fails.
            if (reason instanceof RateLimiterRes) return { kind: "refused", result: reason };
            throw reason;
          },
        ),
        log,
      ),
    async block(subject, log) {
      const result = await orFailOpen(limiter.get(subject), log);
      // Only a block holds more points than the window allows: the library sets points + 1 for it.
      return result && result.consumedPoints > options.points ? result : undefined;
    },
    async startBlock(subject, log) {
      await orFailOpen(limiter.block(subject, options.blockSeconds), log);
    },
  };
}
