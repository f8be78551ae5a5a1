import { configForStart, createLogger, startOrExit, startStoppable, workerHealthUrl } from "@punctual/core";
import { startWorker } from "./worker.ts";

// The health port is checked before the worker takes any job: it opens last, once jobs already flow.
const config = await configForStart("worker");
const logger = createLogger(config, "worker");
await startStoppable(logger, config.SHUTDOWN_TIMEOUT_MS, (signal) =>
  startOrExit(() => startWorker(config, logger, signal), logger),
);
logger.info({ port: config.WORKER_HEALTH_PORT }, `Worker health on ${workerHealthUrl(config)}`);
