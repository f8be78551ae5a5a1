import type { Logger } from "pino";

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits: 0 when it finished within `timeoutMs`, 1 when
 * it had to be cut short. A second signal exits at once.
 */
export function stopOnSignals(logger: Logger, timeoutMs: number, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting now");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, timeoutMs }, "shutting down");
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, "shutdown timed out");
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    stop().then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: error }, "shutdown failed");
        process.exit(1);
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
