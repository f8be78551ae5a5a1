import { AppError, type Clock, digestsEqual, hashApiKey } from "@punctual/core";
import type { Db } from "@punctual/db";
import type { NextFunction, Request, Response } from "express";

declare global {
  namespace Express {
    interface Locals {
      /** The organization of the request's API key; every query is scoped to it. */
      orgId: string;
      apiKeyId: string;
    }
  }
}

interface KeyRow {
  id: string;
  orgId: string;
  hash: string;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

/** `last_used_at` is refreshed at most this often per key, to keep writes off the hot path. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** Contract §2: `x-api-key` → the key's organization; missing, unknown or revoked keys get 401. */
export function apiKeyAuth(db: Db, clock: Clock) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const presented = req.get("x-api-key");
    if (!presented) throw new AppError("UNAUTHORIZED", "Missing API key");
    const hash = hashApiKey(presented);
    // Raw SQL: this runs on every request, and an ORM query costs several times more CPU here.
    const [key] = await db.$queryRaw<KeyRow[]>`
      SELECT id, org_id AS "orgId", hash, revoked_at AS "revokedAt", last_used_at AS "lastUsedAt"
      FROM api_keys WHERE hash = ${hash}`;
    if (!key || key.revokedAt !== null || !digestsEqual(key.hash, hash)) {
      throw new AppError("UNAUTHORIZED", "Invalid API key");
    }
    res.locals.orgId = key.orgId;
    res.locals.apiKeyId = key.id;
    const now = clock.now();
    if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      // Bookkeeping only: the request does not wait for it, and a failure is logged, not fatal.
      db.apiKey
        .update({ where: { id: key.id }, data: { lastUsedAt: now } })
        .catch((error: unknown) => res.locals.log.warn({ err: error }, "could not record API key use"));
    }
    next();
  };
}
