import { Router } from "express";
import type { ApiMetrics } from "./api-metrics.ts";

/**
 * Contract §8: `GET /metrics` in Prometheus text. No API key (a scraper has none); mounted before
 * the rate limiter so scrapes are never refused.
 */
export function metricsRoutes(metrics: ApiMetrics): Router {
  const router = Router();
  router.get("/metrics", async (_req, res) => {
    const text = await metrics.registry.metrics();
    res.type(metrics.registry.contentType).send(text);
  });
  return router;
}
