import { createHash } from "node:crypto";
import { AppError, type Config, type Logger, type Redis, withTimeout } from "@punctual/core";
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from "express";
import { clientAddressSubject } from "./client-address.ts";
import { createCounter, secondsLeft, type Verdict } from "./counter.ts";

// Contract §7: RATE_LIMIT_PER_MINUTE requests per minute per API key (per client address for
// requests without a valid key), then refused for RATE_LIMIT_BLOCK_SECONDS. The counters live in
// Redis, so every API instance shares one budget per client.
//
// Who is counted: a request whose API key authenticates counts against that key (by a digest of
// the key, never the key itself); a request with a missing, unknown or revoked key counts against
// its client address, so inventing keys cannot buy a fresh budget. Routes without API keys (the
// admin API, the OpenAPI document) count against the client address too.
//
// A blocked client costs no database work: before a presented key is looked up in Postgres, a key
// that is blocked is refused, and so is any key from a blocked address unless that key has
// authenticated recently (a known key). So made-up keys from a blocked address are refused on
// Redis alone, while valid keys behind the same address (one NAT, one proxy) keep being served.

export const TOO_MANY_REQUESTS = "Too many requests, please try again later";

/** The counting window of `RATE_LIMIT_PER_MINUTE`. */
const WINDOW_SECONDS = 60;
/** How long a key stays known after it last started a counting window (authenticated). */
const KNOWN_KEY_SECONDS = 24 * 60 * 60;
/** Longest wait for the known-key mark; without an answer the key counts as unknown. */
const KNOWN_KEY_TIMEOUT_MS = 500;

declare global {
  namespace Express {
    interface Locals {
      /** Set once the request has been counted, so that no later step counts it again. */
      rateLimited?: boolean;
      /**
       * The key subject of a request authenticated by a console session instead of `x-api-key`:
       * the subject of the key the session was opened with, so both share one budget.
       */
      rateLimitKey?: string;
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
  /** Refuses a blocked client before its API key is looked up; mount right before the key check. */
  beforeKeyLookup: RequestHandler;
  /** Counts an authenticated request against its API key; mount right after the API key check. */
  byApiKey: RequestHandler;
  /**
   * Error middleware, mounted right after the API key check: a request the check refused (401)
   * counts against its client address, and once that address is over its budget the answer is 429.
   */
  afterRefusedKey: ErrorRequestHandler;
}

/**
 * The subject of a presented API key: a digest under its own prefix, so that Redis holds neither
 * the key nor the hash Postgres finds it by, and it is known before the key is looked up.
 */
export function keySubject(presented: string): string {
  const digest = createHash("sha256").update("punctual rate limit\0").update(presented, "utf8").digest("hex");
  return `key:${digest.slice(0, 32)}`;
}

export const tooManyRequests = () => new AppError("TOO_MANY_REQUESTS", TOO_MANY_REQUESTS);

/** Builds the limiter of one app; state is in Redis under `<QUEUE_PREFIX>:rate-limit:`. */
export function createRateLimit(deps: RateLimitDeps): RateLimit {
  const points = deps.config.RATE_LIMIT_PER_MINUTE;
  const keyPrefix = `${deps.config.QUEUE_PREFIX}:rate-limit`;
  const counter = createCounter({
    redis: deps.redis,
    keyPrefix,
    points,
    windowSeconds: WINDOW_SECONDS,
    blockSeconds: deps.config.RATE_LIMIT_BLOCK_SECONDS,
  });
  const policy = `${points};w=${WINDOW_SECONDS}`;
  const knownKey = (subject: string) => `${keyPrefix}:known-${subject}`;

  /** IETF draft `RateLimit-*` headers, and `Retry-After` on a refusal. */
  function setHeaders(res: Response, verdict: Verdict) {
    const reset = secondsLeft(verdict.result);
    res.setHeader("RateLimit-Policy", policy);
    res.setHeader("RateLimit-Limit", String(points));
    res.setHeader("RateLimit-Remaining", String(verdict.kind === "refused" ? 0 : verdict.result.remainingPoints));
    res.setHeader("RateLimit-Reset", String(reset));
    if (verdict.kind === "refused") res.setHeader("Retry-After", String(Math.max(1, reset)));
  }

  /** Counts the request once; undefined when it was counted before or Redis did not answer. */
  async function count(subject: string, res: Response): Promise<Verdict | undefined> {
    if (res.locals.rateLimited) return undefined;
    res.locals.rateLimited = true;
    const verdict = await counter.consume(subject, res.locals.log);
    if (verdict) setHeaders(res, verdict);
    return verdict;
  }

  async function isKnown(subject: string): Promise<boolean> {
    const found = withTimeout(deps.redis.exists(knownKey(subject)), KNOWN_KEY_TIMEOUT_MS, 0);
    return (await found.catch(() => 0)) === 1;
  }

  /** Off the request's path: the mark is bookkeeping, and a lost write only makes a key unknown. */
  function remember(subject: string, log: Logger) {
    deps.redis
      .set(knownKey(subject), "1", "EX", KNOWN_KEY_SECONDS)
      .catch((error: unknown) => log.debug({ err: error }, "could not mark API key as known"));
  }
  function forget(subject: string, log: Logger) {
    deps.redis.del(knownKey(subject)).catch((error: unknown) => log.debug({ err: error }, "could not unmark API key"));
  }

  return {
    byClientAddress: async (req: Request, res: Response, next: NextFunction) => {
      if ((await count(clientAddressSubject(req.ip), res))?.kind === "refused") throw tooManyRequests();
      next();
    },
    beforeKeyLookup: async (req: Request, res: Response, next: NextFunction) => {
      const presented = req.get("x-api-key");
      // Without a key there is no lookup to spare: the key check refuses it and it is counted then.
      if (!presented) return next();
      const log = res.locals.log;
      const key = keySubject(presented);
      const [keyBlock, addressBlock] = await Promise.all([
        counter.block(key, log),
        counter.block(clientAddressSubject(req.ip), log),
      ]);
      const block = keyBlock ?? (addressBlock && !(await isKnown(key)) ? addressBlock : undefined);
      if (block) {
        // Refused without counting: the block runs its course whatever the client sends meanwhile.
        res.locals.rateLimited = true;
        setHeaders(res, { kind: "refused", result: block });
        throw tooManyRequests();
      }
      next();
    },
    byApiKey: async (req: Request, res: Response, next: NextFunction) => {
      const key = res.locals.rateLimitKey ?? keySubject(req.get("x-api-key") ?? "");
      const verdict = await count(key, res);
      if (verdict?.kind === "refused") throw tooManyRequests();
      // Once per key and window, so that the mark costs one write a minute per active key at most.
      if (verdict?.result.consumedPoints === 1) remember(key, res.locals.log);
      next();
    },
    afterRefusedKey: async (error: unknown, req: Request, res: Response, next: NextFunction) => {
      if (!(error instanceof AppError) || error.code !== "UNAUTHORIZED" || res.locals.rateLimited) {
        return next(error);
      }
      // A revoked key stops being known, so a blocked address cannot have it looked up again.
      const presented = req.get("x-api-key");
      if (presented) forget(keySubject(presented), res.locals.log);
      next((await count(clientAddressSubject(req.ip), res))?.kind === "refused" ? tooManyRequests() : error);
    },
  };
}
