import type { AdminDeps } from "@punctual/core";
import { runCli } from "../src/cli.ts";

/** What one CLI run printed and its exit code. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in this process with the given dependencies, capturing what it prints. */
export async function runCliCapturing(argv: string[], deps: () => AdminDeps): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await runCli(argv, deps, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
  });
  return { code, stdout, stderr };
}
