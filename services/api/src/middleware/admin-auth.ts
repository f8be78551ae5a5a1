import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";
import { readSessionCookie } from "../console-session/session-cookie.ts";
import { adminTokenDigest, type ConsoleSessions } from "../console-session/session-store.ts";
import type { AdminAuthFailures } from "../rate-limit/admin-auth-failures.ts";
import { NOT_SIGNED_IN } from "./api-key-auth.ts";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/**
 * The admin API takes `Authorization: Bearer $ADMIN_TOKEN`. With no token configured
 * it does not exist (404), so an unconfigured deployment exposes nothing. A wrong token counts as a
 * failed login of the client (mount `failures.refuseBlocked` before this).
 *
 * Without an `Authorization` header, an operator's console session cookie stands for the token,
 * while the token it was opened with is still the configured one (mount the session origin check
 * after this). A stale cookie is not a failed login: the browser sends it by itself.
 */
export function adminAuth(adminToken: string | undefined, failures: AdminAuthFailures, sessions: ConsoleSessions) {
  const expected = adminToken === undefined ? undefined : sha256(adminToken);
  const digest = adminToken === undefined ? undefined : adminTokenDigest(adminToken);
  return async (req: Request, res: Response, next: NextFunction) => {
    if (expected === undefined) throw new AppError("NOT_FOUND", "Not found");
    const header = req.get("authorization");
    if (header === undefined) {
      // More than one session cookie is refused (401) here too: see readSessionCookie.
      const id = readSessionCookie(req, res);
      if (id === undefined) throw new AppError("UNAUTHORIZED", "Missing admin token");
      const session = await sessions.read(id);
      // An organization's session is not the operator's: as if no credentials were sent.
      if (session?.kind === "organization") throw new AppError("UNAUTHORIZED", "Missing admin token");
      if (session?.adminTokenDigest !== digest) throw new AppError("UNAUTHORIZED", NOT_SIGNED_IN);
      res.locals.consoleSession = session;
      return next();
    }
    const match = /^Bearer (.+)$/i.exec(header);
    if (!match?.[1]) throw new AppError("UNAUTHORIZED", "Missing admin token");
    // Hashing both sides gives equal lengths, so the comparison is constant-time.
    if (!timingSafeEqual(sha256(match[1]), expected)) {
      await failures.count(req, res, "admin_api");
      throw new AppError("UNAUTHORIZED", "Invalid admin token");
    }
    next();
  };
}
