import type { Logger } from "pino";
import { ConfigError } from "./config.ts";
import { exitAfterLogs } from "./shutdown.ts";

/**
 * A process cannot start for a reason its operator must fix (a port taken, Postgres or Redis out of
 * reach, a database not migrated). The message is one complete line meant for a person: it names
 * the setting involved and what to do, and never holds a password.
 */
export class StartupError extends Error {
  override readonly name = "StartupError";
}

/**
 * Runs a step of a process's start. A ConfigError or StartupError is printed as it is (its
 * message, without a stack trace) and the process exits 1; any other error is passed on, since it is
 * a bug whose stack trace is wanted. With the process's `logger`, its buffered lines are written
 * first (for at most a second), and dropped when nothing reads stdout any more, as at a stop.
 */
export async function startOrExit<T>(start: () => Promise<T>, logger?: Logger): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (!(error instanceof ConfigError || error instanceof StartupError)) throw error;
    process.stderr.write(`${error.message}\n`);
    if (!logger) process.exit(1);
    exitAfterLogs(logger, 1);
    // The exit comes once the lines are written; nothing after the failed step runs meanwhile.
    return new Promise<never>(() => {});
  }
}
