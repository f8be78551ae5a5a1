import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

// The exits of a process whose stdout is a pipe nobody reads any more (a log collector that died,
// `| head -1`): stopOnSignals (shutdown.ts) and startOrExit (startup-error.ts), each in a process of
// its own logging through createLogger.
const loggerModule = fileURLToPath(new URL("./logger.ts", import.meta.url));
const shutdownModule = fileURLToPath(new URL("./shutdown.ts", import.meta.url));
const startupModule = fileURLToPath(new URL("./startup-error.ts", import.meta.url));

/** The start of every program: its logger, then `body`, then "ready" on stdout. */
const program = (body: string) => `
  import { writeSync } from "node:fs";
  import { createLogger } from ${JSON.stringify(loggerModule)};
  import { stopOnSignals } from ${JSON.stringify(shutdownModule)};
  import { StartupError, startOrExit } from ${JSON.stringify(startupModule)};
  const logger = createLogger({ LOG_LEVEL: "info" }, "exit-test");
  ${body}
  setInterval(() => {}, 1000);
  writeSync(1, "ready\\n");
`;

/**
 * Runs `body`, closes the reading end of its stdout once it is ready, then sends `signal`: the
 * process's exit code, or "still running" after 10 s.
 */
async function exitWithoutReader(body: string, signal: NodeJS.Signals): Promise<number | null | string> {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program(body)], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  try {
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    await new Promise<void>((ready, failed) => {
      child.stdout.once("data", () => ready());
      child.once("exit", (code) => failed(new Error(`exited ${code} before it was ready: ${stderr}`)));
    });
    // The lines logged from here on are still in the logger's buffer when the process exits.
    child.stdout.destroy();
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill(signal);
    return await Promise.race([exited, new Promise<string>((resolve) => setTimeout(resolve, 10_000, "still running"))]);
  } finally {
    child.kill("SIGKILL");
  }
}

it("exits 0 on SIGTERM when whatever read its log lines has gone away", async () => {
  const outcome = await exitWithoutReader(
    `stopOnSignals(logger, 5000, async () => { logger.info("stopping"); });`,
    "SIGTERM",
  );
  expect(outcome).toBe(0);
}, 30_000);

it("exits 1 at a failed start when whatever read its log lines has gone away", async () => {
  // The start fails (on SIGUSR2) after a line was logged.
  const outcome = await exitWithoutReader(
    `process.on("SIGUSR2", () => {
      logger.info("starting");
      void startOrExit(() => Promise.reject(new StartupError("port 3000 is taken")), logger);
    });`,
    "SIGUSR2",
  );
  expect(outcome).toBe(1);
}, 30_000);
