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
export function loadEnvFile(path: string | undefined = settingsFilePath()): string | undefined {
  if (path === undefined || !existsSync(path)) {
    if (path !== undefined && process.env[ENV_FILE_VARIABLE]) {
      throw new ConfigError(`${ENV_FILE_VARIABLE} names ${path}, which does not exist`);
    }
    return undefined;
  }
  try {
    process.loadEnvFile(path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`Cannot read the settings file ${path}: ${reason}`);
  }
  return path;
}

/**
 * `PUNCTUAL_ENV_FILE` names another settings file, or `none` for no file at all (what the test
 * helpers use, so that a developer's own `.env` cannot leak into the processes a test starts).
 */
const ENV_FILE_VARIABLE = "PUNCTUAL_ENV_FILE";

function settingsFilePath(): string | undefined {
  const chosen = process.env[ENV_FILE_VARIABLE];
  if (chosen === "none") return undefined;
  return resolve(process.cwd(), chosen || ".env");
}
