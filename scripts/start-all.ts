// `pnpm start`: the API and one delivery worker in one process, for a single machine.

import { startApi } from "@punctual/api";
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
  workerHealthTarget,
  workerHealthUrl,
} from "@punctual/core";
import { startWorker } from "@punctual/worker";

orExit(() => loadEnvFile());
const config = orExit(() => loadConfig());
// Before anything connects or listens: both ports free, Postgres and Redis usable; otherwise one
// line per problem saying what to fix, and exit 1 (no stack trace).
await startOrExit(() => ensurePortFree(apiListenTarget(config)));
await startOrExit(() => ensurePortFree(workerHealthTarget(config)));
await startOrExit(() => checkDependencies(config));
const logger = createLogger(config, "punctual");
const api = await startOrExit(() => startApi(config, logger.child({ service: "api" })));
const worker = await startOrExit(() => startWorker(config, logger.child({ service: "worker" })));
logger.info(
  { port: api.port, workerHealthPort: config.WORKER_HEALTH_PORT },
  `API listening on ${listeningUrl(config.HOST, api.port)}, worker health on ${workerHealthUrl(config)}`,
);

stopOnSignals(logger, config.SHUTDOWN_TIMEOUT_MS, async () => {
  await Promise.all([api.stop(), worker.stop()]);
});
