import { type Logger, pino } from "pino";
import type { Config } from "./config.ts";

export type { Logger };

/** JSON logs on stdout; secrets never appear (API keys and auth headers are redacted). */
export function createLogger(config: Pick<Config, "LOG_LEVEL">, name: string): Logger {
  return pino({
    name,
    level: config.LOG_LEVEL,
    redact: ["req.headers['x-api-key']", "req.headers.authorization", "apiKey", "signingSecret"],
  });
}
