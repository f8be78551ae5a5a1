import {
  apiKeyConsoleSessions,
  createRedis,
  escapeUnsafeText,
  loadConfig,
  loadEnvFile,
  orExit,
  type Redis,
} from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { runCli } from "./cli.ts";

/** How long revoking or rotating a key waits for Redis to delete the key's console sessions. */
const SESSIONS_TIMEOUT_MS = 5_000;

orExit(() => loadEnvFile());
const config = orExit(() => loadConfig());
let db: Db | undefined;
// Only revoking or rotating a key needs Redis (to delete the key's console sessions): the other
// commands run without it, and so does the CLI while Redis is down.
let redis: Redis | undefined;
const consoleSessions = apiKeyConsoleSessions({
  redis: () => {
    if (!redis) {
      redis = createRedis(config);
      // A connection that fails is what the timeout reports, once; not a line per retry.
      redis.on("error", () => undefined);
    }
    return redis;
  },
  prefix: config.QUEUE_PREFIX,
  timeoutMs: SESSIONS_TIMEOUT_MS,
  // The key is revoked in Postgres, which every request with a session checks: its sessions are
  // refused from now on and expire by themselves. Said, not failed: a rotation's new key is shown
  // only now.
  failed: (apiKeyId, error) => {
    const reason = escapeUnsafeText(error instanceof Error ? error.message : String(error));
    process.stderr.write(
      `warning: the console sessions of ${apiKeyId} could not be deleted from Redis (${reason}); they are refused from now on and expire within CONSOLE_SESSION_TTL_SECONDS\n`,
    );
  },
});
const code = await runCli(
  process.argv.slice(2),
  () => {
    db = createDb(config.DATABASE_URL, { poolSize: 2 });
    return { db, config, consoleSessions };
  },
  { stdout: (text) => process.stdout.write(text), stderr: (text) => process.stderr.write(text) },
);
await db?.$disconnect();
// A connection still trying to reach Redis is dropped rather than waited for.
redis?.disconnect();
process.exitCode = code;
