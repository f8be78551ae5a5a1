import { configForStart, createLogger, startOrExit, stopOnSignals, workerHealthUrl } from "@punctual/core";
import { startWorker } from "./worker.ts";

// The health port is checked before the worker takes any job: it opens last, once jobs already flow.
const config = await configForStart("worker");
const logger = createLogger(config, "worker");
const worker = await startOrExit(() => startWorker(config, logger), logger);
logger.info({ port: config.WORKER_HEALTH_PORT }, `Worker health on ${workerHealthUrl(config)}`);
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, () => worker.stop());
