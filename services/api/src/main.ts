import {
  apiListenTarget,
  checkDependencies,
  createLogger,
  ensurePortFree,
  listeningUrl,
  loadConfig,
  loadEnvFile,
  orExit,
  startOrExit,
  stopOnSignals,
} from "@punctual/core";
import { startApi } from "./server.ts";

orExit(() => loadEnvFile());
const config = orExit(() => loadConfig());
// Before anything connects or listens: a taken port, an unreachable or unmigrated Postgres, or an
// unreachable Redis stops the start with one line saying what to fix (exit 1, no stack trace).
await startOrExit(() => ensurePortFree(apiListenTarget(config)));
await startOrExit(() => checkDependencies(config));
const logger = createLogger(config, "api");
// An unusable ADMIN_TOKEN_FILE is a configuration error like a bad variable: the same clean exit.
const api = await startOrExit(() => startApi(config, logger));
logger.info({ host: config.HOST, port: api.port }, `API listening on ${listeningUrl(config.HOST, api.port)}`);
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, api.stop);
