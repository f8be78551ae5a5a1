import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

// stopOnSignals (shutdown.ts) in a process of its own whose stdout is a pipe.
const loggerModule = fileURLToPath(new URL("./logger.ts", import.meta.url));
const shutdownModule = fileURLToPath(new URL("./shutdown.ts", import.meta.url));

/** A process that logs through createLogger and stops on SIGTERM; it says "ready" once it listens. */
const PROGRAM = `
  import { writeSync } from "node:fs";
  import { createLogger } from ${JSON.stringify(loggerModule)};
  import { stopOnSignals } from ${JSON.stringify(shutdownModule)};
  const logger = createLogger({ LOG_LEVEL: "info" }, "exit-test");
  stopOnSignals(logger, 5000, async () => { logger.info("stopping"); });
  setInterval(() => {}, 1000);
  writeSync(1, "ready\\n");
`;

it("exits 0 on SIGTERM when whatever read its log lines has gone away", async () => {
  const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", PROGRAM], {
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
    // A log collector that died, or \`| head -1\`: nobody reads the pipe any more. The lines of the
    // shutdown are then still in the logger's buffer when the process exits.
    child.stdout.destroy();
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.kill("SIGTERM");
    const outcome = await Promise.race([
      exited,
      new Promise((resolve) => setTimeout(resolve, 10_000, "still running")),
    ]);
    expect(outcome, stderr).toBe(0);
  } finally {
    child.kill("SIGKILL");
  }
}, 30_000);
