// `pnpm db:migrate`: creates the database named in DATABASE_URL when it does not exist yet, then
// applies the committed migrations with `prisma migrate deploy`.
import { spawnSync } from "node:child_process";
import { loadConfig, orExit } from "@punctual/core";
import pg from "pg";

const { DATABASE_URL } = orExit(() => loadConfig());
const target = new URL(DATABASE_URL);
const database = decodeURIComponent(target.pathname.slice(1));
const maintenance = new URL(DATABASE_URL);
maintenance.pathname = "/postgres";

const client = new pg.Client({ connectionString: maintenance.toString() });
try {
  await client.connect();
  const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
  if (exists.rowCount === 0) {
    await client.query(`CREATE DATABASE "${database.replaceAll('"', '""')}"`);
    process.stdout.write(`Created database ${database}\n`);
  }
} catch (error) {
  // No rights on the maintenance database (e.g. a managed service): migrate the existing database.
  process.stdout.write(`Could not check for database ${database} (${(error as Error).message}); migrating it as is\n`);
} finally {
  await client.end().catch(() => {});
}

const result = spawnSync("prisma", ["migrate", "deploy"], {
  stdio: "inherit",
  env: { ...process.env, DATABASE_URL },
});
process.exit(result.status ?? 1);
