import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ConfigError } from "./config.ts";

/**
 * Reads the `.env` file of the working directory into `process.env`, when there is one; returns
 * its path, or undefined when there is none. Every entry point calls it before reading its
 * configuration, so settings can live in a file instead of exported variables.
 *
 * A variable already in the environment wins over the file, even when it is set to an empty
 * string: Node's own `process.loadEnvFile` never replaces a variable that is set, so an operator's
 * `PORT=4000 pnpm start` or a container's environment always beats a forgotten `.env`.
 * The file's syntax is Node's (`KEY=value`, `#` comments, quotes); an unquoted `#` starts a
 * comment, so a value containing one (a password) must be quoted.
 */
export function loadEnvFile(path: string = resolve(process.cwd(), ".env")): string | undefined {
  if (!existsSync(path)) return undefined;
  try {
    process.loadEnvFile(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`Cannot read the settings file ${path}: ${reason}`);
  }
  return path;
}
