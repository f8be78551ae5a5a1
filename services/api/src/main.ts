import { createLogger, loadConfig, orExit, stopOnSignals } from "@punctual/core";
import { startApi } from "./server.ts";

const config = orExit(() => loadConfig());
const logger = createLogger(config, "api");
const api = await startApi(config, logger);
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, api.stop);
