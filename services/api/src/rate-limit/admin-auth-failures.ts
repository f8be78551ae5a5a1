import type { Config, Redis } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";
import type { Counter as PromCounter } from "prom-client";
import { sessionCookiesOf } from "../console-session/session-cookie.ts";
import { clientAddressSubject } from "./client-address.ts";
import { createCounter, secondsLeft } from "./counter.ts";
import { tooManyRequests } from "./rate-limit.ts";

// Failed admin logins (a wrong token on the admin API or on Bull Board, a wrong API key or admin
// token at the console's sign-in) are counted per client address in Redis, one budget for every
// surface: ADMIN_AUTH_FAILURES_PER_MINUTE failures, the last
// of which blocks the address for RATE_LIMIT_BLOCK_SECONDS. While blocked, every admin request of
// that address that presents a credential someone could be guessing — the admin token (Bearer or
// Basic), an API key or the token at a sign-in — is refused with 429 before it is even compared, the
// right one included: a guess that happens to be right is not told apart from a wrong one, so
// guessing gains nothing from the answers. Requests without credentials (a browser before its login
// prompt) are not failures. Like the request limiter, this fails open when Redis does not answer:
// the token comparison still guards the door.
//
// The one exception is the admin API reached with only the console's session cookie (no
// `Authorization` header): an operator who signed in before the block keeps working from that
// address. Letting it through gives a guesser nothing: the cookie holds a random 256-bit id that
// nobody guesses, a wrong one was never counted as a failed login (middleware/admin-auth.ts), and
// opening a session takes a sign-in, which the block refuses.

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
  /**
   * refuseBlocked for the admin API, except a request whose only credential is a console session
   * cookie: it goes on to its check while the client is blocked (see above).
   */
  refuseBlockedExceptSessions(req: Request, res: Response, next: NextFunction): Promise<void>;
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

  async function refuseBlocked(req: Request, res: Response, next: NextFunction) {
    const block = await counter.block(clientAddressSubject(req.ip), res.locals.log);
    if (block) {
      res.setHeader("Retry-After", String(Math.max(1, secondsLeft(block))));
      throw tooManyRequests();
    }
    next();
  }

  return {
    refuseBlocked,
    async refuseBlockedExceptSessions(req, res, next) {
      // Without a header the cookie is the credential, as adminAuth reads it: that check decides.
      if (req.get("authorization") === undefined && sessionCookiesOf(req).length > 0) return next();
      return refuseBlocked(req, res, next);
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
