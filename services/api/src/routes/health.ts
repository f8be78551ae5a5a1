import type { Redis } from "@punctual/core";
import type { Db } from "@punctual/db";
import { Router } from "express";

const CHECK_TIMEOUT_MS = 1_000;

async function withinTimeout(check: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.then(() => true), timeout]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Contract §8: `/healthz` says the process is up; `/readyz` that Postgres and Redis answer. */
export function healthRoutes(db: Db, redis: Redis): Router {
  const router = Router();
  router.get("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  router.get("/readyz", async (_req, res) => {
    const [postgres, redisUp] = await Promise.all([withinTimeout(db.$queryRaw`SELECT 1`), withinTimeout(redis.ping())]);
    if (postgres && redisUp) {
      res.json({ status: "ready", postgres: "up", redis: "up" });
      return;
    }
    const down = [postgres ? undefined : "Postgres", redisUp ? undefined : "Redis"].filter(Boolean);
    res.status(503).json({ message: `Not ready: ${down.join(" and ")} unreachable` });
  });
  return router;
}
