import { createHash, timingSafeEqual } from "node:crypto";
import type { NextFunction, Request, Response } from "express";

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
 * admin API takes it. Anything else gets 401 with a Basic challenge.
 */
export function adminCredentials(adminToken: string) {
  const expected = sha256(adminToken);
  return (req: Request, res: Response, next: NextFunction) => {
    const token = presentedToken(req.get("authorization"));
    // Hashing both sides gives equal lengths, so the comparison is constant-time.
    if (token !== undefined && timingSafeEqual(sha256(token), expected)) return next();
    res.setHeader("WWW-Authenticate", `Basic realm="${ADMIN_REALM}"`);
    res.status(401).json({ message: CREDENTIALS_REQUIRED });
  };
}
