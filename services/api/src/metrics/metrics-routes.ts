import type { Request, Response } from "express";
import { defineRoute } from "../routing/route.ts";
import type { ApiMetrics } from "./api-metrics.ts";

/**
 * Contract §8: `GET /metrics` in Prometheus text. No API key (a scraper has none); mounted before
 * the rate limiter so scrapes are never refused.
 */
export const metricsRoute = defineRoute({
  method: "get",
  path: "/metrics",
  operationId: "getMetrics",
  summary: "Prometheus metrics",
  description: "HTTP latency by route and status, deliveries by outcome, delivery lateness, queue depth.",
  tag: "Operations",
  security: "none",
  responses: {
    "200": {
      description: "Prometheus text exposition format.",
      content: { "text/plain": { schema: { type: "string" } } },
    },
  },
  handler: (deps: { metrics: ApiMetrics }) => async (_req: Request, res: Response) => {
    const text = await deps.metrics.registry.metrics();
    res.type(deps.metrics.registry.contentType).send(text);
  },
});
