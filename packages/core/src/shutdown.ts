import type { Logger } from "pino";

/** The longest the last log lines may take to be written at an exit. */
const LOG_FLUSH_AT_EXIT_MS = 1_000;

/**
 * Exits with `code` once the logger's buffered lines are written (or could not be). Writing them
 * first, asynchronously, matters: at `process.exit` pino writes what is left synchronously, and
 * sonic-boom (4.2) retries a synchronous write that fails with anything but EAGAIN forever, so a
 * process whose stdout had gone away (EPIPE: a dead log collector, `| head`) never exited. A
 * failed asynchronous write instead makes pino drop its later lines, and the exit goes through.
 */
export function exitAfterLogs(logger: Logger, code: number): void {
  const exit = () => process.exit(code);
  setTimeout(exit, LOG_FLUSH_AT_EXIT_MS);
  logger.flush(exit);
}

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits: 0 when it finished within `timeoutMs`, 1 when
 * it had to be cut short. A second signal exits at once (its lines written first, within a second).
 */
export function stopOnSignals(logger: Logger, timeoutMs: number, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting now");
      exitAfterLogs(logger, 1);
      return;
    }
    stopping = true;
    logger.info({ signal, timeoutMs }, "shutting down");
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, "shutdown timed out");
      exitAfterLogs(logger, 1);
    }, timeoutMs);
    deadline.unref();
    stop().then(
      () => {
        logger.info("stopped");
        exitAfterLogs(logger, 0);
      },
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        exitAfterLogs(logger, 1);
      },
    );
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

/** Loads something needed at start, or prints why it cannot and exits 1 (bad configuration). */
export function orExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}

/** A started service: what `startStoppable` starts. */
export interface Stoppable {
  stop(): Promise<void>;
}

/**
 * Starts a service with SIGTERM and SIGINT handled from the start's first moment. A signal during
 * the start aborts `signal` (a worker's warm-up, which lasts seconds, ends early), lets the start
 * finish, stops the service and exits 0, as a signal after the start does. Without it, Node's
 * default action ended a process stopped while starting by the signal itself: exit 143, which
 * `docker compose stop` right after a start or a restart reported as a failure.
 */
export function startStoppable<T extends Stoppable>(
  logger: Logger,
  timeoutMs: number,
  start: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const aborting = new AbortController();
  const started = start(aborting.signal);
  stopOnSignals(logger, timeoutMs, async () => {
    aborting.abort();
    await (await started).stop();
  });
  return started;
}
