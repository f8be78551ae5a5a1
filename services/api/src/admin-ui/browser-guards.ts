import { forbidden } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";

// Bull Board runs in the operator's browser with cached Basic credentials, which the browser adds to
// any request to this origin, including one a hostile page makes. Two guards keep other sites from
// acting through them: unsafe requests must come from this origin, and no page may frame ours
// (clickjacking).

export const CROSS_SITE_WRITE_REFUSED = "Cross-site requests may not change the queues";

/** Methods that change nothing, which any page may cause (links, images, preflights). */
const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

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
 * Refuses (403) an unsafe request a browser says comes from another site: `Sec-Fetch-Site`
 * `cross-site` or `same-site` (a sibling subdomain is another origin too), or an `Origin` whose
 * host is not the request's `Host`. A request with neither header (curl, scripts) is no browser's
 * and passes; browsers send `Origin` on every cross-origin unsafe request.
 */
export function refuseCrossSiteWrites() {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (SAFE_METHODS.has(req.method)) return next();
    const site = req.get("sec-fetch-site");
    const origin = req.get("origin");
    if (site === "cross-site" || site === "same-site" || (origin !== undefined && !isSameOrigin(origin, req.host))) {
      throw forbidden(CROSS_SITE_WRITE_REFUSED);
    }
    next();
  };
}

/** Forbids framing: the legacy header for old browsers and the CSP directive that replaced it. */
export function noFraming() {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.setHeader("X-Frame-Options", "DENY");
    res.setHeader("Content-Security-Policy", "frame-ancestors 'none'");
    next();
  };
}
