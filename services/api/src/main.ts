import { configForStart, createLogger, listeningUrl, startOrExit, stopOnSignals } from "@punctual/core";
import { startApi } from "./server.ts";

const config = await configForStart("api");
const logger = createLogger(config, "api");
// An unusable ADMIN_TOKEN_FILE is a configuration error like a bad variable: the same clean exit.
const api = await startOrExit(() => startApi(config, logger), logger);
logger.info({ host: config.HOST, port: api.port }, `API listening on ${listeningUrl(config.HOST, api.port)}`);
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, api.stop);
