import { forbidden } from "@punctual/core";
import type { NextFunction, Request, Response } from "express";
import { CROSS_SITE_REQUEST_REFUSED, isSafeMethod, isSameOriginRequest } from "../admin-ui/browser-guards.ts";

/**
 * Refuses (403) a change authenticated by the console's cookie that does not show it comes from
 * this origin. The browser adds the cookie by itself; SameSite=Strict already keeps other sites'
 * requests from carrying it, and this check is the second lock (older browsers, a sibling
 * subdomain under the same site). Requests authenticated by a header (`x-api-key`, Bearer) pass:
 * no page can make a browser add those. Mount after the credentials check and the rate limit.
 */
export function refuseCrossSiteSessionWrites() {
  return (req: Request, res: Response, next: NextFunction) => {
    if (res.locals.consoleSession && !isSafeMethod(req.method) && !isSameOriginRequest(req)) {
      throw forbidden(CROSS_SITE_REQUEST_REFUSED);
    }
    next();
  };
}
