import { createHash, timingSafeEqual } from "node:crypto";
import { AppError } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/**
 * Contract §2: the admin API takes `Authorization: Bearer $ADMIN_TOKEN`. With no token configured
 * it does not exist (404), so an unconfigured deployment exposes nothing.
 */
export function adminAuth(adminToken: string | undefined) {
  const expected = adminToken === undefined ? undefined : sha256(adminToken);
  return (req: Request, _res: Response, next: NextFunction) => {
    if (expected === undefined) throw new AppError("NOT_FOUND", "Not found");
    const header = req.get("authorization") ?? "";
    const match = /^Bearer (.+)$/i.exec(header);
    if (!match?.[1]) throw new AppError("UNAUTHORIZED", "Missing admin token");
    // Hashing both sides gives equal lengths, so the comparison is constant-time.
    if (!timingSafeEqual(sha256(match[1]), expected)) throw new AppError("UNAUTHORIZED", "Invalid admin token");
    next();
  };
}
