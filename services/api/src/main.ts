import { ConfigError, createLogger, loadConfig, orExit, stopOnSignals } from "@punctual/core";
import { startApi } from "./server.ts";

const config = orExit(() => loadConfig());
const logger = createLogger(config, "api");
// An unusable ADMIN_TOKEN_FILE is a configuration error like a bad variable: one clear message,
// exit 1, no stack trace.
const api = await startApi(config, logger).catch((error: unknown) => {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
});
stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, api.stop);
