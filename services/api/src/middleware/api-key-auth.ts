import { AppError, type Clock, createBatcher, hashApiKey } from "@punctual/core";
import { type Db, Prisma, queryRows } from "@punctual/db";
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

/**
 * Looks keys up by hash. The lookups of one turn of the event loop share one query (one round
 * trip), and requests presenting the same key share its row; each still reads the key as it is now.
 */
function keyLookup(db: Db) {
  const batcher = createBatcher(async (hashes: string[]): Promise<(KeyRow | undefined)[]> => {
    // Raw SQL straight on the pool: this runs on every request, and the ORM, or even Prisma's raw
    // queries, cost several times more CPU here.
    const rows = await queryRows<KeyRow>(
      db,
      Prisma.sql`
        SELECT id, org_id AS "orgId", hash, revoked_at AS "revokedAt", last_used_at AS "lastUsedAt"
        FROM api_keys WHERE hash = ANY(${[...new Set(hashes)]}::text[])`,
    );
    const byHash = new Map(rows.map((row) => [row.hash, row]));
    return hashes.map((hash) => byHash.get(hash));
  });
  return (hash: string) => batcher.run(hash);
}

/** Contract §2: `x-api-key` → the key's organization; missing, unknown or revoked keys get 401. */
export function apiKeyAuth(db: Db, clock: Clock) {
  const lookUp = keyLookup(db);
  return async (req: Request, res: Response, next: NextFunction) => {
    const presented = req.get("x-api-key");
    if (!presented) throw new AppError("UNAUTHORIZED", "Missing API key");
    const hash = hashApiKey(presented);
    const key = await lookUp(hash);
    // The key was found by its hash (an exact match in SQL), so no second comparison is needed.
    if (!key || key.revokedAt !== null) {
      throw new AppError("UNAUTHORIZED", "Invalid API key");
    }
    res.locals.orgId = key.orgId;
    res.locals.apiKeyId = key.id;
    const now = clock.now();
    if (!key.lastUsedAt || now.getTime() - key.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      // Bookkeeping only: the request does not wait for it, and a failure is logged, not fatal. The
      // row is shared by the requests of one lookup batch: mark it so that they write it once.
      key.lastUsedAt = now;
      db.apiKey
        .update({ where: { id: key.id }, data: { lastUsedAt: now } })
        .catch((error: unknown) => res.locals.log.warn({ err: error }, "could not record API key use"));
    }
    next();
  };
}
