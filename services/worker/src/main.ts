import { createLogger, createRedis, loadConfig, orExit, stopOnSignals, systemClock } from "@punctual/core";
import { createDb } from "@punctual/db";
import { createWorker } from "./worker.ts";

const config = orExit(() => loadConfig());
const logger = createLogger(config, "worker");
const db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
const redis = createRedis(config.REDIS_URL);
redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
const worker = createWorker({ config, db, redis, clock: systemClock, logger });
await worker.start();
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await worker.stop();
  await Promise.allSettled([db.$disconnect(), redis.quit()]);
});
