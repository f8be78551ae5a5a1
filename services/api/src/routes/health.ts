import { withTimeout } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";

const CHECK_TIMEOUT_MS = 1_000;

/** True when the check answers within the limit; false when it fails or is too slow. */
const answers = (check: Promise<unknown>) =>
  withTimeout(
    check.then(() => true),
    CHECK_TIMEOUT_MS,
    false,
  ).catch(() => false);

/** Contract §8: `/healthz` says the process is up. */
const healthRoute = defineRoute({
  method: "get",
  path: "/healthz",
  operationId: "getHealth",
  summary: "Liveness: the process is up",
  tag: "Operations",
  security: "none",
  responses: { "200": { description: "Up.", json: "Health" } },
  handler: () => (_req: Request, res: Response) => {
    res.json({ status: "ok" });
  },
});

/** Contract §8: `/readyz` says that Postgres and Redis answer. */
const readinessRoute = defineRoute({
  method: "get",
  path: "/readyz",
  operationId: "getReadiness",
  summary: "Readiness: Postgres and Redis answer",
  tag: "Operations",
  security: "none",
  responses: {
    "200": { description: "Ready.", json: "Ready" },
    "503": errorResponse("Postgres or Redis does not answer.", "Not ready: Redis unreachable"),
  },
  handler: (deps: Pick<ApiDeps, "db" | "redis">) => async (_req: Request, res: Response) => {
    const [postgres, redisUp] = await Promise.all([answers(deps.db.$queryRaw`SELECT 1`), answers(deps.redis.ping())]);
    if (postgres && redisUp) {
      res.json({ status: "ready", postgres: "up", redis: "up" });
      return;
    }
    const down = [postgres ? undefined : "Postgres", redisUp ? undefined : "Redis"].filter(Boolean);
    res.status(503).json({ message: `Not ready: ${down.join(" and ")} unreachable` });
  },
});

export const healthRoutes = [healthRoute, readinessRoute];
