// `pnpm db:migrate`: creates the database named in DATABASE_URL when it does not exist yet, then
// applies the committed migrations with `prisma migrate deploy`.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, loadEnvFile, orExit, postgresProblem, redactUrl, STARTUP_CHECK_TIMEOUT_MS } from "@punctual/core";
import { probeDatabase } from "@punctual/db";
import pg from "pg";

orExit(() => loadEnvFile());
const { DATABASE_URL } = orExit(() => loadConfig());

/** Prints one line for the operator and exits 1 (no stack trace: nothing here is a bug). */
function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

const probe = await probeDatabase(DATABASE_URL, STARTUP_CHECK_TIMEOUT_MS);
// Unreachable or login refused: Prisma's own error would say the same less clearly, after a wait.
if (probe.status === "unreachable" || probe.status === "login-refused") {
  fail(postgresProblem(DATABASE_URL, probe) ?? "");
}
if (probe.status === "missing") {
  const database = decodeURIComponent(new URL(DATABASE_URL).pathname.slice(1));
  const maintenance = new URL(DATABASE_URL);
  maintenance.pathname = "/postgres";
  const client = new pg.Client({
    connectionString: maintenance.toString(),
    connectionTimeoutMillis: STARTUP_CHECK_TIMEOUT_MS,
  });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`);
    process.stdout.write(`Created database ${database}\n`);
  } catch (error) {
    // Created meanwhile by another run (42P04, duplicate_database): migrate it.
    if (!(error instanceof pg.DatabaseError && error.code === "42P04"))
      // No rights to create databases (a managed service, say): the operator creates it.
      fail(
        `Database "${database}" does not exist at ${redactUrl(DATABASE_URL)} (DATABASE_URL) and could not be created: ${(error as Error).message}. Create it, then run pnpm db:migrate again.`,
      );
  } finally {
    await client.end().catch(() => {});
  }
}

// From the repository root, where Prisma finds prisma.config.ts, whatever the working directory.
const root = fileURLToPath(new URL("..", import.meta.url));
const result = spawnSync(join(root, "node_modules/.bin/prisma"), ["migrate", "deploy"], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, DATABASE_URL },
});
if (result.error) fail(`Cannot run the Prisma CLI: ${result.error.message}. Run pnpm install first.`);
process.exit(result.status ?? 1);
