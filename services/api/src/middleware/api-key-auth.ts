import { AppError, type Clock, createBatcher, hashApiKey } from "@punctual/core";
import { type Db, Prisma, queryRows } from "@punctual/db";
import type { NextFunction, Request, Response } from "express";
import { readSessionCookie } from "../console-session/session-cookie.ts";
import type { ConsoleSession, ConsoleSessions } from "../console-session/session-store.ts";

/** A console session cookie that names no live session (signed out, expired or key revoked). */
export const NOT_SIGNED_IN = "Not signed in";

/**
 * The organization the console's page shows, sent with each of its calls. The page learned it
 * when it loaded; the browser's cookie may stand for another organization's session since (another
 * tab signed in, or another host of the site replaced the cookie), and the call would act there
 * while the page shows the first one. So a call made with the cookie and this header is refused
 * when they disagree.
 */
export const CONSOLE_ORGANIZATION_HEADER = "x-console-organization";
export const OTHER_ORGANIZATION_SESSION = "The session cookie is another organization's than the page's; sign in again";

declare global {
  namespace Express {
    interface Locals {
      /** The organization of the request's API key; every query is scoped to it. */
      orgId: string;
      apiKeyId: string;
      /** The console session the request was authenticated by, when it came with the cookie. */
      consoleSession?: ConsoleSession;
    }
  }
}

export interface KeyRow {
  id: string;
  orgId: string;
  hash: string;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

/** `last_used_at` is refreshed at most this often per key, to keep writes off the hot path. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface ApiKeyLookup {
  /** The key whose hash this is (a presented key), revoked or not. */
  byHash(hash: string): Promise<KeyRow | undefined>;
  /** The key of this id (a console session's), revoked or not. */
  byId(id: string): Promise<KeyRow | undefined>;
}

/**
 * Looks keys up by hash or by id. The lookups of one turn of the event loop share one query (one
 * round trip), and requests presenting the same key share its row; each still reads the key as it
 * is now.
 */
export function createApiKeyLookup(db: Db): ApiKeyLookup {
  const batched = (column: Prisma.Sql, field: "hash" | "id") =>
    createBatcher(async (values: string[]): Promise<(KeyRow | undefined)[]> => {
      // Raw SQL straight on the pool: this runs on every request, and the ORM, or even Prisma's raw
      // queries, cost several times more CPU here.
      const rows = await queryRows<KeyRow>(
        db,
        Prisma.sql`
          SELECT id, org_id AS "orgId", hash, revoked_at AS "revokedAt", last_used_at AS "lastUsedAt"
          FROM api_keys WHERE ${column} = ANY(${[...new Set(values)]}::text[])`,
      );
      const found = new Map(rows.map((row) => [row[field], row]));
      return values.map((value) => found.get(value));
    });
  const byHash = batched(Prisma.sql`hash`, "hash");
  const byId = batched(Prisma.sql`id`, "id");
  return { byHash: (hash) => byHash.run(hash), byId: (id) => byId.run(id) };
}

export interface ApiKeyAuthDeps {
  db: Db;
  clock: Clock;
  keys: ApiKeyLookup;
  sessions: ConsoleSessions;
}

/**
 * The key of a request without `x-api-key` that carries a console session cookie: the key its
 * organization session was opened with, while that key is still active. A session whose key was
 * revoked (or rotated) ends here. An operator's session is no organization's: it is ignored. More
 * than one cookie, or a session of another organization than the page's, is refused (401).
 */
async function sessionKey(
  req: Request,
  res: Response,
  deps: ApiKeyAuthDeps,
): Promise<KeyRow | "missing" | "signed out"> {
  const id = readSessionCookie(req, res);
  if (id === undefined) return "missing";
  const session = await deps.sessions.read(id);
  if (session === undefined) return "signed out";
  if (session.kind !== "organization") return "missing";
  const key = await deps.keys.byId(session.apiKeyId);
  if (!key || key.revokedAt !== null || key.orgId !== session.orgId) {
    await deps.sessions.end(id);
    return "signed out";
  }
  const shown = req.get(CONSOLE_ORGANIZATION_HEADER);
  // Not ended: the session is good, only not the one this page was opened on.
  if (shown !== undefined && shown !== session.orgId) throw new AppError("UNAUTHORIZED", OTHER_ORGANIZATION_SESSION);
  res.locals.consoleSession = session;
  res.locals.rateLimitKey = session.rateLimitKey;
  return key;
}

/**
 * `x-api-key` → the key's organization; missing, unknown or revoked keys get 401.
 * Without the header, an organization's console session cookie stands for the key it was opened
 * with (mount the session origin check after the rate limit).
 */
export function apiKeyAuth(deps: ApiKeyAuthDeps) {
  const { db, clock } = deps;
  return async (req: Request, res: Response, next: NextFunction) => {
    const presented = req.get("x-api-key");
    let key: KeyRow | undefined;
    if (presented) {
      key = await deps.keys.byHash(hashApiKey(presented));
      // The key was found by its hash (an exact match in SQL), so no second comparison is needed.
      if (!key || key.revokedAt !== null) {
        throw new AppError("UNAUTHORIZED", "Invalid API key");
      }
    } else {
      const found = await sessionKey(req, res, deps);
      if (found === "missing") throw new AppError("UNAUTHORIZED", "Missing API key");
      if (found === "signed out") throw new AppError("UNAUTHORIZED", NOT_SIGNED_IN);
      key = found;
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
