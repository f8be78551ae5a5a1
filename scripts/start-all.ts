// `pnpm start`: the API and one delivery worker in one process, for a single machine.

import { startApi } from "@punctual/api";
import { createLogger, loadConfig, orExit, stopOnSignals } from "@punctual/core";
import { startWorker } from "@punctual/worker";

const config = orExit(() => loadConfig());
const logger = createLogger(config, "punctual");
const api = await startApi(config, logger.child({ service: "api" }));
const worker = await startWorker(config, logger.child({ service: "worker" }));

stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await Promise.all([api.stop(), worker.stop()]);
});
