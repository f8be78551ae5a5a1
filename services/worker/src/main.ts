import { createLogger, loadConfig, orExit, stopOnSignals } from "@punctual/core";
import { startWorker } from "./worker.ts";

const config = orExit(() => loadConfig());
const logger = createLogger(config, "worker");
const worker = await startWorker(config, logger);
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, () => worker.stop());
