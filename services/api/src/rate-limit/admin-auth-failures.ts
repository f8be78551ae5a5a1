import type { Config, Redis } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";
import type { Counter as PromCounter } from "prom-client";
import { clientAddressSubject } from "./client-address.ts";
import { createCounter, secondsLeft } from "./counter.ts";
import { tooManyRequests } from "./rate-limit.ts";

// Failed admin logins (a wrong token on the admin API or on Bull Board, a wrong API key or admin
// token at the console's sign-in) are counted per client address in Redis, one budget for every
// surface: ADMIN_AUTH_FAILURES_PER_MINUTE failures, the last
// of which blocks the address for RATE_LIMIT_BLOCK_SECONDS. While blocked, every admin request of
// that address is refused with 429 before its credentials are even compared, the right token
// included, so guessing gains nothing from the answers. Requests without credentials (a browser
// before its login prompt) are not failures. Like the request limiter, this fails open when Redis
// does not answer: the token comparison still guards the door.

/** Where a failed login happened: the `surface` label of `punctual_admin_auth_failures_total`. */
export type AdminSurface = "admin_api" | "queue_dashboard" | "console";

const WINDOW_SECONDS = 60;

export interface AdminAuthFailuresDeps {
  config: Pick<Config, "ADMIN_AUTH_FAILURES_PER_MINUTE" | "RATE_LIMIT_BLOCK_SECONDS" | "QUEUE_PREFIX">;
  redis: Redis;
  /** `punctual_admin_auth_failures_total{surface}`. */
  failuresTotal: PromCounter<"surface">;
}

export interface AdminAuthFailures {
  /** Refuses (429) a client blocked for failed admin logins; mount before the credentials check. */
  refuseBlocked(req: Request, res: Response, next: NextFunction): Promise<void>;
  /** Counts one failed login of the request's client; blocks it (and logs why) at the limit. */
  count(req: Request, res: Response, surface: AdminSurface): Promise<void>;
}

export function createAdminAuthFailures(deps: AdminAuthFailuresDeps): AdminAuthFailures {
  const blockSeconds = deps.config.RATE_LIMIT_BLOCK_SECONDS;
  const counter = createCounter({
    redis: deps.redis,
    keyPrefix: `${deps.config.QUEUE_PREFIX}:admin-auth-failures`,
    points: deps.config.ADMIN_AUTH_FAILURES_PER_MINUTE,
    windowSeconds: WINDOW_SECONDS,
    blockSeconds,
  });

  return {
    async refuseBlocked(req, res, next) {
      const block = await counter.block(clientAddressSubject(req.ip), res.locals.log);
      if (block) {
        res.setHeader("Retry-After", String(Math.max(1, secondsLeft(block))));
        throw tooManyRequests();
      }
      next();
    },
    async count(req, res, surface) {
      deps.failuresTotal.inc({ surface });
      const client = clientAddressSubject(req.ip);
      const verdict = await counter.consume(client, res.locals.log);
      // The failure that uses the last point starts the block, so that the very next attempt is
      // refused. (Concurrent failures past it are blocked by the counter itself.)
      if (verdict?.kind !== "allowed" || verdict.result.remainingPoints > 0) return;
      await counter.startBlock(client, res.locals.log);
      res.locals.log.warn(
        { client, surface, failures: counter.points, blockSeconds },
        "client blocked after too many failed admin logins",
      );
    },
  };
}
