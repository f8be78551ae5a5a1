import { execFile } from "node:child_process";
import { existsSync } from "node:fs";

// Programs of Debian's packages that some checks run: promtool (package `prometheus`) for the alert
// rules, caddy for the TLS example. .ci/run installs them; outside CI a missing one skips its
// check with a message, in CI it fails it (as the browser check does with Chromium).

/** CI as CI systems set it (CI=true, or 1); unset, empty, 0 or false is a developer's machine. */
const inCi = !["", "0", "false"].includes((process.env.CI ?? "").trim().toLowerCase());

export interface SystemTool {
  path: string;
  /** The Debian package that installs it. */
  debianPackage: string;
}

export const PROMTOOL: SystemTool = {
  path: process.env.PROMTOOL_PATH ?? "/usr/bin/promtool",
  debianPackage: "prometheus",
};
export const CADDY: SystemTool = { path: process.env.CADDY_PATH ?? "/usr/bin/caddy", debianPackage: "caddy" };

const missing = (tool: SystemTool) =>
  `${tool.path} is missing: install Debian's ${tool.debianPackage} (apt-get install ${tool.debianPackage})`;

/** Whether a check that needs `tool` is skipped (missing, outside CI); says so once, naming the check. */
export function skipWithout(tool: SystemTool, check: string): boolean {
  const skip = !existsSync(tool.path) && !inCi;
  if (skip) console.warn(`${check} skipped: ${missing(tool)}`);
  return skip;
}

/** Fails with what to install when `tool` is missing (in CI, where nothing is skipped). */
export function requireTool(tool: SystemTool): string {
  if (!existsSync(tool.path)) throw new Error(`CI=${process.env.CI} but ${missing(tool)}`);
  return tool.path;
}

export interface ToolRun {
  code: number;
  /** stdout and stderr together, as a terminal shows them. */
  output: string;
}

/** Runs a tool to its end and gives its exit code and output (a failing run is an answer, not an error). */
export function runTool(tool: SystemTool, args: string[], options: { cwd: string }): Promise<ToolRun> {
  const path = requireTool(tool);
  return new Promise((resolve, reject) => {
    execFile(path, args, { cwd: options.cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (error && typeof error.code !== "number") reject(new Error(`${path} ${args.join(" ")}: ${error.message}`));
      else resolve({ code: typeof error?.code === "number" ? error.code : 0, output });
    });
  });
}
