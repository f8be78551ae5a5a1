import type { CookieOptions, Request, Response } from "express";

/** The console's session cookie: it holds only the session's random id. */
export const SESSION_COOKIE = "punctual_session";

/**
 * HttpOnly: no script of the page can read it. SameSite=Strict: no other site's page makes the
 * browser send it. Secure whenever the request came over HTTPS (`req.secure` honours TRUST_PROXY,
 * so behind a TLS-ending proxy it is set too); over plain HTTP (a local run) it could not be kept.
 */
function cookieOptions(req: Request): CookieOptions {
  return { httpOnly: true, sameSite: "strict", path: "/", secure: req.secure };
}

/** The session id the request's cookie carries, if any. */
export function readSessionCookie(req: Request): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const pair of header.split(";")) {
    const separator = pair.indexOf("=");
    if (separator === -1 || pair.slice(0, separator).trim() !== SESSION_COOKIE) continue;
    return pair.slice(separator + 1).trim() || undefined;
  }
  return undefined;
}

/** Sets the cookie for a new session, kept by the browser as long as the session lasts. */
export function setSessionCookie(req: Request, res: Response, id: string, ttlSeconds: number): void {
  res.cookie(SESSION_COOKIE, id, { ...cookieOptions(req), maxAge: ttlSeconds * 1000 });
}

export function clearSessionCookie(req: Request, res: Response): void {
  res.clearCookie(SESSION_COOKIE, cookieOptions(req));
}
