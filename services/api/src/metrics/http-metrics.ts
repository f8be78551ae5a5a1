import type { NextFunction, Request, Response } from "express";
import type { ApiMetrics } from "./api-metrics.ts";

/** The route label of a request no route matched (404s, and requests refused before routing, e.g. 401). */
export const UNMATCHED_ROUTE = "unmatched";

interface RoutedRequest {
  baseUrl: string;
  route?: { path: unknown };
}

/**
 * The full route pattern (`/api/events/:eventId`) of the route that handled a request. Express sets
 * `req.route` when a route matches, but restores `req.baseUrl` to the outer router's value as an
 * error leaves a sub-router, so by the time the response ends the two no longer fit together. The
 * pattern is therefore taken at the moment the route is set. Mount paths are static strings (never
 * parameters), so `baseUrl` holds no ids; it is lower-cased because Express matches paths without
 * regard to case, which would otherwise let a client create new label values at will.
 */
function captureRoute(req: RoutedRequest): { readonly label: string } {
  const captured = { label: UNMATCHED_ROUTE };
  let route: RoutedRequest["route"];
  Object.defineProperty(req, "route", {
    configurable: true,
    enumerable: true,
    get: () => route,
    set: (value: RoutedRequest["route"]) => {
      route = value;
      if (!value) return;
      const path = String(value.path);
      const base = req.baseUrl.toLowerCase();
      captured.label = path === "/" && base !== "" ? base : `${base}${path}`;
    },
  });
  return captured;
}

/** Observes every request in `http_request_duration_seconds`, labelled by route pattern, never by raw URL. */
export function httpMetrics(metrics: ApiMetrics) {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    const route = captureRoute(req);
    res.once("finish", () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.httpRequestDuration.observe(
        { method: req.method, route: route.label, status_code: String(res.statusCode) },
        seconds,
      );
    });
    next();
  };
}
