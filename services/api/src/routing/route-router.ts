import { type RequestHandler, Router } from "express";
import type { ApiDeps } from "../api-deps.ts";
import type { RequestLimits, Route } from "./route.ts";

export interface RouterOptions {
  /** Where the router is mounted: declared paths start with it and the router matches the rest. */
  mountedAt?: string;
  /** Middleware run before each route's handler, only for requests that match a route. */
  before?: RequestHandler[];
}

/** `/api/events/{eventId}` under `/api/events` is `/:eventId`. */
function routerPath(path: string, mountedAt: string): string {
  if (!path.startsWith(mountedAt)) throw new Error(`Route ${path} is not under ${mountedAt}`);
  const relative = path.slice(mountedAt.length) || "/";
  return relative.replace(/\{([A-Za-z0-9_]+)\}/g, ":$1");
}

/** The request schemas' limits for this deployment, from its configuration and clock. */
export function requestLimits(deps: Pick<ApiDeps, "config" | "clock">): RequestLimits {
  return {
    maxPayloadBytes: deps.config.MAX_PAYLOAD_BYTES,
    now: () => deps.clock.now(),
    allowPrivateDestinations: deps.config.ALLOW_PRIVATE_DESTINATIONS,
  };
}

/** An Express router serving the declared routes, in their order; documented-only ones are skipped. */
export function routerFor<D>(
  routes: readonly Route<D>[],
  deps: D & Pick<ApiDeps, "config" | "clock">,
  options: RouterOptions = {},
): Router {
  const router = Router();
  const limits = requestLimits(deps);
  for (const route of routes) {
    if (!route.handle) continue;
    router[route.method](
      routerPath(route.path, options.mountedAt ?? ""),
      ...(options.before ?? []),
      route.handle(deps, limits),
    );
  }
  return router;
}
