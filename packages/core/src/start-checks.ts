import { type Config, loadConfig } from "./config.ts";
import { checkDependencies } from "./dependency-checks.ts";
import { loadEnvFile } from "./env-file.ts";
import { apiListenTarget, ensurePortFree, workerHealthTarget } from "./ports.ts";
import { orExit } from "./shutdown.ts";
import { startOrExit } from "./startup-error.ts";

/** What a process opens: the API's port, the worker's health port, or both (`pnpm start`). */
export type StartingProcess = "api" | "worker" | "api and worker";

/**
 * What every long-running entry point does first: reads `.env` and the configuration, then checks,
 * before anything connects or listens, that its ports are free and that Postgres and Redis are
 * usable. A problem stops the start with one line saying what to fix, and exit 1 (no stack trace).
 */
export async function configForStart(starting: StartingProcess): Promise<Config> {
  orExit(() => loadEnvFile());
  const config = orExit(() => loadConfig());
  if (starting !== "worker") await startOrExit(() => ensurePortFree(apiListenTarget(config)));
  if (starting !== "api") await startOrExit(() => ensurePortFree(workerHealthTarget(config)));
  await startOrExit(() => checkDependencies(config));
  return config;
}
