import { type Redis, withTimeout } from "@punctual/core";
import type { Db } from "@punctual/db";
import { Router } from "express";

const CHECK_TIMEOUT_MS = 1_000;

/** True when the check answers within the limit; false when it fails or is too slow. */
const answers = (check: Promise<unknown>) =>
  withTimeout(
    check.then(() => true),
    CHECK_TIMEOUT_MS,
    false,
  ).catch(() => false);

/** Contract §8: `/healthz` says the process is up; `/readyz` that Postgres and Redis answer. */
export function healthRoutes(db: Db, redis: Redis): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
    const [postgres, redisUp] = await Promise.all([answers(db.$queryRaw`SELECT 1`), answers(redis.ping())]);
    if (postgres && redisUp) {
      res.json({ status: "ready", postgres: "up", redis: "up" });
      return;
    }
    const down = [postgres ? undefined : "Postgres", redisUp ? undefined : "Redis"].filter(Boolean);
    res.status(503).json({ message: `Not ready: ${down.join(" and ")} unreachable` });
  });
  return router;
}
