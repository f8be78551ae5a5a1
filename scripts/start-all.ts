// `pnpm start`: the API and one delivery worker in one process, for a single machine.

import { startApi } from "@punctual/api";
import { createLogger, createRedis, loadConfig, orExit, stopOnSignals, systemClock } from "@punctual/core";
import { createDb } from "@punctual/db";
import { createWorker } from "@punctual/worker";

const config = orExit(() => loadConfig());
const logger = createLogger(config, "punctual");
const api = await startApi(config, logger.child({ service: "api" }));

const workerDb = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
const workerRedis = createRedis(config.REDIS_URL);
workerRedis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
const worker = createWorker({
  config,
  db: workerDb,
  redis: workerRedis,
  clock: systemClock,
  logger: logger.child({ service: "worker" }),
});
await worker.start();

stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await Promise.all([api.stop(), worker.stop()]);
  await Promise.allSettled([workerDb.$disconnect(), workerRedis.quit()]);
});
