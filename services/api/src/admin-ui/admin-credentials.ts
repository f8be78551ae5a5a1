import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";
import type { AdminAuthFailures } from "../rate-limit/admin-auth-failures.ts";

/** The realm a browser shows when it asks for the dashboard's credentials. */
export const ADMIN_REALM = "Punctual";
export const CREDENTIALS_REQUIRED = "Admin credentials required";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** The token in `Authorization`: `Bearer <token>`, or HTTP Basic with the token as the password. */
function presentedToken(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const bearer = /^Bearer +(\S.*)$/i.exec(header);
  if (bearer) return bearer[1];
  const basic = /^Basic +([A-Za-z0-9+/]+={0,2}) *$/i.exec(header);
  if (!basic?.[1]) return undefined;
  const decoded = Buffer.from(basic[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  return colon === -1 ? undefined : decoded.slice(colon + 1);
}

/**
 * Guards the operator dashboards with `ADMIN_TOKEN`: HTTP Basic (any user name, the token as the
 * password), so a browser can log in with its own prompt, or `Authorization: Bearer <token>` as the
 * admin API takes it. Anything else gets 401 with a Basic challenge; credentials that were sent but
 * are wrong also count as a failed login of the client (mount `failures.refuseBlocked` before this).
 */
export function adminCredentials(adminToken: string, failures: AdminAuthFailures) {
  const expected = sha256(adminToken);
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get("authorization");
    const token = presentedToken(header);
    // Hashing both sides gives equal lengths, so the comparison is constant-time.
    if (token !== undefined && timingSafeEqual(sha256(token), expected)) return next();
    // No header is a browser's first request, before it prompts for credentials: not a failure.
    if (header) await failures.count(req, res, "queue_dashboard");
    res.setHeader("WWW-Authenticate", `Basic realm="${ADMIN_REALM}"`);
    res.status(401).json({ message: CREDENTIALS_REQUIRED });
  };
}
