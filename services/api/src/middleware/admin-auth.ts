import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";
import type { AdminAuthFailures } from "../rate-limit/admin-auth-failures.ts";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/**
 * Contract §2: the admin API takes `Authorization: Bearer $ADMIN_TOKEN`. With no token configured
 * it does not exist (404), so an unconfigured deployment exposes nothing. A wrong token counts as a
 * failed login of the client (mount `failures.refuseBlocked` before this).
 */
export function adminAuth(adminToken: string | undefined, failures: AdminAuthFailures) {
  const expected = adminToken === undefined ? undefined : sha256(adminToken);
  return async (req: Request, res: Response, next: NextFunction) => {
    if (expected === undefined) throw new AppError("NOT_FOUND", "Not found");
    const header = req.get("authorization") ?? "";
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
