import { isIP } from "node:net";
import { AppError } from "@punctual/core";
import type { CookieOptions, Request, Response } from "express";

/** The console's session cookie over plain HTTP: it holds only the session's random id. */
export const SESSION_COOKIE = "punctual_session";
/**
 * Its name over HTTPS. A browser keeps a `__Host-` cookie only when it is Secure, has Path=/ and no
 * Domain, and lets no other host (a sibling subdomain) set one for this host: no page elsewhere can
 * slip in a second cookie of this name for a narrower path, which the browser would send first.
 */
export const SECURE_SESSION_COOKIE = `__Host-${SESSION_COOKIE}`;

/** The answer to a request that carries more than one session cookie. */
export const SEVERAL_SESSION_COOKIES = "More than one session cookie was sent; sign in again";

/** The cookie's name for this request: `req.secure` honours TRUST_PROXY (X-Forwarded-Proto). */
const cookieNameOf = (req: Request) => (req.secure ? SECURE_SESSION_COOKIE : SESSION_COOKIE);

/**
 * HttpOnly: no script of the page can read it. SameSite=Strict: no other site's page makes the
 * browser send it. Secure whenever the request came over HTTPS (`req.secure` honours TRUST_PROXY,
 * so behind a TLS-ending proxy it is set too); over plain HTTP (a local run) it could not be kept.
 */
function cookieOptions(req: Request): CookieOptions {
  return { httpOnly: true, sameSite: "strict", path: "/", secure: req.secure };
}

/** The values of every cookie named `name` the request carries, in the order sent, empty ones too. */
function cookieValues(req: Request, name: string): string[] {
  const header = req.headers.cookie;
  if (!header) return [];
  const values: string[] = [];
  for (const pair of header.split(";")) {
    const separator = pair.indexOf("=");
    if (separator !== -1 && pair.slice(0, separator).trim() === name) values.push(pair.slice(separator + 1).trim());
  }
  return values;
}

/**
 * Every session cookie of this request's scheme, as sent. Over HTTPS only the `__Host-` name is
 * read: a plain `punctual_session` there is no cookie this API set (or one from before the prefix)
 * and may have been set by another host.
 */
export function sessionCookiesOf(req: Request): string[] {
  return cookieValues(req, cookieNameOf(req));
}

/**
 * The session id the request's cookie carries, if any. A request carrying more than one is refused
 * (401) and told to forget them all: a browser sends two cookies of one name only when another
 * port or host of the site set one of its own, for a narrower path or a parent domain, to make
 * some requests act for another session than the one the console shows.
 */
export function readSessionCookie(req: Request, res: Response): string | undefined {
  const values = sessionCookiesOf(req);
  if (values.length > 1) {
    clearSessionCookies(req, res);
    throw new AppError("UNAUTHORIZED", SEVERAL_SESSION_COOKIES);
  }
  return values[0] || undefined;
}

/** Sets the cookie for a new session, kept by the browser as long as the session lasts. */
export function setSessionCookie(req: Request, res: Response, id: string, ttlSeconds: number): void {
  res.cookie(cookieNameOf(req), id, { ...cookieOptions(req), maxAge: ttlSeconds * 1000 });
  clearPlainCookieOverHttps(req, res);
}

/** Clears the session cookie, and with several, every other one the request could have carried. */
export function clearSessionCookie(req: Request, res: Response): void {
  if (sessionCookiesOf(req).length > 1) clearSessionCookies(req, res);
  else res.clearCookie(cookieNameOf(req), cookieOptions(req));
  clearPlainCookieOverHttps(req, res);
}

/**
 * Over HTTPS, a plain `punctual_session` is the cookie of a sign-in from before the `__Host-` name
 * (also Path=/, host-only): expired when the request shows it, so it does not linger.
 */
function clearPlainCookieOverHttps(req: Request, res: Response): void {
  if (req.secure && cookieValues(req, SESSION_COOKIE).length > 0) {
    res.clearCookie(SESSION_COOKIE, cookieOptions(req));
  }
}

/** Characters a cookie's Path may hold (those of the `cookie` package's check, which throws). */
const COOKIE_PATH = /^[\u0020-\u003A\u003D-\u007E]*$/;
/** Bounds on the cookies cleared for one request: a long path must not make a huge answer. */
const MAX_PATHS = 12;
const MAX_DOMAINS = 4;

/**
 * Every Path a cookie sent with this request can have: `/`, each ancestor of the request's path
 * with and without its trailing slash, and the path itself (a cookie's path matches the request's
 * when it is a prefix ending at a `/`).
 */
function pathsOf(req: Request): string[] {
  const path = (req.originalUrl.split("?")[0] ?? "/") || "/";
  const paths = new Set(["/"]);
  for (let at = path.indexOf("/", 1); at !== -1 && paths.size < MAX_PATHS; at = path.indexOf("/", at + 1)) {
    paths.add(path.slice(0, at));
    paths.add(path.slice(0, at + 1));
  }
  if (paths.size < MAX_PATHS) paths.add(path);
  return [...paths].filter((candidate) => COOKIE_PATH.test(candidate));
}

/**
 * The Domain attributes a cookie sent here can have: none (host-only), the host itself and each of
 * its parents with two labels or more (`app.example.com`, `example.com`). A browser refuses a
 * Domain that is a public suffix; that clearing is simply ignored.
 */
function domainsOf(req: Request): (string | undefined)[] {
  const host = req.hostname;
  if (!host || isIP(host) !== 0 || !host.includes(".") || !/^[A-Za-z0-9.-]+$/.test(host)) return [undefined];
  const labels = host.split(".");
  const parents: string[] = [];
  for (let first = 0; first <= labels.length - 2 && parents.length < MAX_DOMAINS; first++) {
    parents.push(labels.slice(first).join("."));
  }
  return [undefined, ...parents];
}

/**
 * Expires every session cookie the request could have carried. Over HTTPS that is the `__Host-`
 * cookie alone (a browser keeps no other Path or Domain for that name). Over HTTP, one of another
 * port or subdomain has a Path and Domain this API does not know: each one it can have is cleared.
 */
function clearSessionCookies(req: Request, res: Response): void {
  const options = cookieOptions(req);
  if (req.secure) {
    res.clearCookie(SECURE_SESSION_COOKIE, options);
    return;
  }
  for (const domain of domainsOf(req)) {
    for (const path of pathsOf(req)) {
      res.clearCookie(SESSION_COOKIE, { ...options, path, ...(domain === undefined ? {} : { domain }) });
    }
  }
}
