// `pnpm start`: the API and one delivery worker in one process, for a single machine.

import { startApi } from "@punctual/api";
import {
  configForStart,
  createLogger,
  listeningUrl,
  startOrExit,
  startStoppable,
  workerHealthUrl,
} from "@punctual/core";
import { startWorker } from "@punctual/worker";

const config = await configForStart("api and worker");
const logger = createLogger(config, "punctual");
const { api } = await startStoppable(logger, config.SHUTDOWN_TIMEOUT_MS, async (signal) => {
  const api = await startOrExit(() => startApi(config, logger.child({ service: "api" })), logger);
  const worker = await startOrExit(() => startWorker(config, logger.child({ service: "worker" }), signal), logger);
  return {
    api,
    async stop() {
      await Promise.all([api.stop(), worker.stop()]);
    },
  };
});
logger.info(
  { port: api.port, workerHealthPort: config.WORKER_HEALTH_PORT },
  `API listening on ${listeningUrl(config.HOST, api.port)}, worker health on ${workerHealthUrl(config)}`,
);
