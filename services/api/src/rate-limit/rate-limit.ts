import { AppError, type Config, type Logger, type Redis, withTimeout } from "@punctual/core";
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from "express";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { clientAddressSubject } from "./client-address.ts";

// Contract §7: RATE_LIMIT_PER_MINUTE requests per minute per API key (per client address for
// requests without a valid key), then refused for RATE_LIMIT_BLOCK_SECONDS. The counters live in
// Redis, so every API instance shares one budget per client.
//
// Who is counted: a request whose API key authenticates counts against that key (by key id, never
// by the secret); a request with a missing, unknown or revoked key counts against its client
// address, so inventing keys cannot buy a fresh budget. Routes without API keys (the admin API,
// the OpenAPI document) count against the client address too.
//
// Redis trouble never takes the API down: when the counter cannot be read within a short time the
// request goes through (fail open) and the outage is logged.

export const TOO_MANY_REQUESTS = "Too many requests, please try again later";

/** The counting window of `RATE_LIMIT_PER_MINUTE`. */
const WINDOW_SECONDS = 60;
/** Longest wait for Redis before a request is let through uncounted. */
const STORE_TIMEOUT_MS = 500;
const STORE_TIMED_OUT = { error: new Error(`no answer within ${STORE_TIMEOUT_MS} ms`) };
/** While Redis is down every request would log; one line per this interval is enough. */
const FAIL_OPEN_LOG_INTERVAL_MS = 10_000;

declare global {
  namespace Express {
    interface Locals {
      /** Set once the request has been counted, so that no later step counts it again. */
      rateLimited?: boolean;
    }
  }
}

export interface RateLimitDeps {
  config: Pick<Config, "RATE_LIMIT_PER_MINUTE" | "RATE_LIMIT_BLOCK_SECONDS" | "QUEUE_PREFIX">;
  redis: Redis;
  logger: Logger;
}

export interface RateLimit {
  /** Counts the request against its client address (routes without an API key). */
  byClientAddress: RequestHandler;
  /** Counts an authenticated request against its API key; mount right after the API key check. */
  byApiKey: RequestHandler;
  /**
   * Error middleware, mounted right after the API key check: a request the check refused (401)
   * counts against its client address, and once that address is over its budget the answer is 429.
   */
  afterRefusedKey: ErrorRequestHandler;
}

type Verdict = { kind: "allowed"; result: RateLimiterRes } | { kind: "refused"; result: RateLimiterRes } | undefined;

const seconds = (ms: number) => Math.max(0, Math.ceil(ms / 1000));

/** Builds the limiter of one app; state is in Redis under `<QUEUE_PREFIX>:rate-limit:`. */
export function createRateLimit(deps: RateLimitDeps): RateLimit {
  const points = deps.config.RATE_LIMIT_PER_MINUTE;
  const limiter = new RateLimiterRedis({
    storeClient: deps.redis,
    keyPrefix: `${deps.config.QUEUE_PREFIX}:rate-limit`,
    points,
    duration: WINDOW_SECONDS,
    blockDuration: deps.config.RATE_LIMIT_BLOCK_SECONDS,
    // The API's connection queues commands while Redis is away (BullMQ needs that); the limiter
    // must not wait for a reconnect, so it fails at once unless the connection is ready.
    rejectIfRedisNotReady: true,
  });
  const policy = `${points};w=${WINDOW_SECONDS}`;
  let lastFailOpenLog = 0;

  function failOpen(error: unknown, log: Logger) {
    const now = Date.now();
    if (now - lastFailOpenLog < FAIL_OPEN_LOG_INTERVAL_MS) return;
    lastFailOpenLog = now;
    log.warn({ err: error }, "rate limiter unavailable; letting requests through uncounted");
  }

  /** One point for `subject`; undefined when Redis did not answer in time (fail open). */
  async function consume(subject: string, log: Logger): Promise<Verdict> {
    const counted = limiter.consume(subject).then(
      (result): Verdict => ({ kind: "allowed", result }),
      (reason: unknown): Verdict | { error: unknown } =>
        // The library rejects with a RateLimiterRes when over the limit, with an Error when Redis fails.
        reason instanceof RateLimiterRes ? { kind: "refused", result: reason } : { error: reason },
    );
    const outcome = await withTimeout(counted, STORE_TIMEOUT_MS, STORE_TIMED_OUT);
    if (outcome && "error" in outcome) {
      failOpen(outcome.error, log);
      return undefined;
    }
    return outcome;
  }

  /** IETF draft `RateLimit-*` headers, and `Retry-After` on a refusal. */
  function setHeaders(res: Response, verdict: NonNullable<Verdict>) {
    const reset = seconds(verdict.result.msBeforeNext);
    res.setHeader("RateLimit-Policy", policy);
    res.setHeader("RateLimit-Limit", String(points));
    res.setHeader("RateLimit-Remaining", String(verdict.kind === "refused" ? 0 : verdict.result.remainingPoints));
    res.setHeader("RateLimit-Reset", String(reset));
    if (verdict.kind === "refused") res.setHeader("Retry-After", String(Math.max(1, reset)));
  }

  /** Counts the request once; true when it may go on. */
  async function admit(subject: string, res: Response): Promise<boolean> {
    if (res.locals.rateLimited) return true;
    res.locals.rateLimited = true;
    const verdict = await consume(subject, res.locals.log);
    if (!verdict) return true;
    setHeaders(res, verdict);
    return verdict.kind === "allowed";
  }

  const tooMany = () => new AppError("TOO_MANY_REQUESTS", TOO_MANY_REQUESTS);

  return {
    byClientAddress: async (req: Request, res: Response, next: NextFunction) => {
      if (!(await admit(clientAddressSubject(req.ip), res))) throw tooMany();
      next();
    },
    byApiKey: async (_req: Request, res: Response, next: NextFunction) => {
      if (!(await admit(`key:${res.locals.apiKeyId}`, res))) throw tooMany();
      next();
    },
    afterRefusedKey: async (error: unknown, req: Request, res: Response, next: NextFunction) => {
      if (!(error instanceof AppError) || error.code !== "UNAUTHORIZED" || res.locals.rateLimited) {
        return next(error);
      }
      next((await admit(clientAddressSubject(req.ip), res)) ? error : tooMany());
    },
  };
}
