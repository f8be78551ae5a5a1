import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { ConfigSchema } from "@punctual/core";
import { repositoryRoot } from "../support/processes.ts";

// Entry points run as a newcomer runs them: their own process, in a working directory of their
// own holding a .env file, with no Punctual setting exported unless a test says so.

/** tsx's loader by absolute URL: `--import tsx` would be looked up from the temporary directory. */
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href;

/** A temporary working directory; `.env` holds `settings` when given. */
export async function workingDirectory(settings?: Record<string, string>): Promise<{
  dir: string;
  remove(): Promise<void>;
}> {
  const dir = await mkdtemp(join(tmpdir(), "punctual-entry-"));
  if (settings) {
    const lines = Object.entries(settings).map(([key, value]) => `${key}=${value}`);
    await writeFile(join(dir, ".env"), `# written by a test\n${lines.join("\n")}\n`);
  }
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

/** This process's environment without any Punctual setting, plus `env`. */
function environment(env: Record<string, string>): NodeJS.ProcessEnv {
  const clean: NodeJS.ProcessEnv = { ...process.env };
  for (const key of Object.keys(ConfigSchema.shape)) delete clean[key];
  return { ...clean, ...env };
}

export interface EntryPointProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** Sends SIGTERM (unless it has exited) and waits for the exit. */
  stop(): Promise<number | null>;
}

/** Starts `script` (a path from the repository root) under tsx, in `cwd`, with `env` exported. */
export function startEntryPoint(script: string, cwd: string, env: Record<string, string> = {}): EntryPointProcess {
  const child = spawn(process.execPath, ["--import", tsxLoader, join(repositoryRoot, script)], {
    cwd,
    env: environment(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** Runs `script` to its end; its exit code and output. */
export async function runEntryPoint(
  script: string,
  cwd: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const entry = startEntryPoint(script, cwd, env);
  const code = await entry.exited;
  return { code, stdout: entry.stdout(), stderr: entry.stderr() };
}

/** The `msg` of every JSON log line written so far. */
export function logMessages(output: string): string[] {
  return output
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? "");
}
