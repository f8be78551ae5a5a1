import {
  checkDependencies,
  createLogger,
  ensurePortFree,
  loadConfig,
  loadEnvFile,
  orExit,
  startOrExit,
  stopOnSignals,
  workerHealthTarget,
  workerHealthUrl,
} from "@punctual/core";
import { startWorker } from "./worker.ts";

orExit(() => loadEnvFile());
const config = orExit(() => loadConfig());
// Before the worker takes any job: its health port must be free (it opens last, once jobs already
// flow), and Postgres and Redis usable; otherwise one line saying what to fix, and exit 1.
await startOrExit(() => ensurePortFree(workerHealthTarget(config)));
await startOrExit(() => checkDependencies(config));
const logger = createLogger(config, "worker");
const worker = await startOrExit(() => startWorker(config, logger));
logger.info({ port: config.WORKER_HEALTH_PORT }, `Worker health on ${workerHealthUrl(config)}`);
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, () => worker.stop());
