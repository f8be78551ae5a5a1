import { forbidden } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";

// Bull Board runs in the operator's browser with cached Basic credentials, which the browser adds to
// any request to this origin, including one a hostile page makes. Two guards keep other sites from
// acting through them: unsafe requests must come from this origin, and no page may frame ours
// (clickjacking). The console's session cookie is guarded the same way, more strictly (see
// isSameOriginRequest).

export const CROSS_SITE_WRITE_REFUSED = "Cross-site requests may not change the queues";
/** The refusal of a cookie-authenticated change that does not show it comes from this origin. */
export const CROSS_SITE_REQUEST_REFUSED = "Cross-site request refused";

/** Methods that change nothing, which any page may cause (links, images, preflights). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

export const isSafeMethod = (method: string) => SAFE_METHODS.has(method);

/** True when `origin` (an `Origin` header) names the host the request was sent to. */
function isSameOrigin(origin: string, host: string | undefined): boolean {
  if (!host) return false;
  try {
    // Through URL both sides lose a default port and letter case. The scheme is not compared: a
    // proxy ending TLS makes the request look like http here while the page's origin is https.
    return new URL(origin).host === new URL(`http://${host}`).host;
  } catch {
    // `Origin: null` (a sandboxed frame, a redirect) or a malformed value: not this origin.
    return false;
  }
}

/**
 * True when a browser says the request comes from another site: `Sec-Fetch-Site` `cross-site` or
 * `same-site` (a sibling subdomain is another origin too), or an `Origin` whose host is not the
 * request's `Host`. A request with neither header (curl, scripts) is no browser's: false.
 */
function comesFromAnotherSite(req: Request): boolean {
  const site = req.get("sec-fetch-site");
  const origin = req.get("origin");
  return site === "cross-site" || site === "same-site" || (origin !== undefined && !isSameOrigin(origin, req.host));
}

/**
 * True only when the request shows it comes from this origin: an `Origin` naming the request's
 * host, or, without `Origin`, `Sec-Fetch-Site: same-origin`. For credentials a browser adds by
 * itself (the console's cookie), where a request that says nothing is not given the benefit of
 * the doubt. Browsers send `Origin` on every fetch that is not GET or HEAD.
 */
export function isSameOriginRequest(req: Request): boolean {
  const site = req.get("sec-fetch-site");
  const origin = req.get("origin");
  if (site !== undefined && site !== "same-origin") return false;
  return origin === undefined ? site === "same-origin" : isSameOrigin(origin, req.host);
}

/**
 * Refuses (403, with `message`) an unsafe request a browser says comes from another site; a
 * request without `Origin` or `Sec-Fetch-Site` (curl, scripts) passes.
 */
export function refuseCrossSiteWrites(message = CROSS_SITE_WRITE_REFUSED) {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (!isSafeMethod(req.method) && comesFromAnotherSite(req)) throw forbidden(message);
    next();
  };
}

/**
 * Forbids framing: the legacy header for old browsers and the CSP directive that replaced it, added
 * to `policy` (the rest of the page's Content-Security-Policy, if it has one).
 */
export function noFraming(policy: readonly string[] = []) {
  const header = [...policy, "frame-ancestors 'none'"].join("; ");
  return (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader("X-Frame-Options", "DENY");
    res.setHeader("Content-Security-Policy", header);
    next();
  };
}
