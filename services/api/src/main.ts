import { configForStart, createLogger, listeningUrl, startOrExit, startStoppable } from "@punctual/core";
import { startApi } from "./server.ts";

const config = await configForStart("api");
const logger = createLogger(config, "api");
// An unusable ADMIN_TOKEN_FILE is a configuration error like a bad variable: the same clean exit.
const api = await startStoppable(logger, config.SHUTDOWN_TIMEOUT_MS, () =>
  startOrExit(() => startApi(config, logger), logger),
);
logger.info({ host: config.HOST, port: api.port }, `API listening on ${listeningUrl(config.HOST, api.port)}`);
