import { execFile } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";

// Test databases: the migrations are applied once per test run to a template database, and each
// test file gets its own copy (`CREATE DATABASE … TEMPLATE …` takes milliseconds, a migration ~10 s).

const repositoryRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const migrationsDir = join(repositoryRoot, "prisma/migrations");

/** The server tests use; its database name is only the one connected to for administration. */
export function testServerUrl(): string {
  return process.env.TEST_DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/test";
}

/** The URL of database `name` on the test server. */
export function urlForDatabase(name: string): string {
  const url = new URL(testServerUrl());
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `work` with a client of the database at `url`, then ends the client. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function migrationsHash(): Promise<string> {
  const hash = createHash("sha256");
  for (const entry of (await readdir(migrationsDir, { recursive: true })).sort()) {
    if (!entry.endsWith(".sql")) continue;
    hash.update(entry).update(await readFile(join(migrationsDir, entry)));
  }
  return hash.digest("hex").slice(0, 12);
}

/** Applies the committed migrations to a database with `prisma migrate deploy`. */
export async function migrateDatabase(url: string): Promise<void> {
  await promisify(execFile)(join(repositoryRoot, "node_modules/.bin/prisma"), ["migrate", "deploy"], {
    cwd: repositoryRoot,
    env: { ...process.env, DATABASE_URL: url },
  });
}

/** Makes sure the migrated template of the current migrations exists; returns its name. */
export async function prepareTemplateDatabase(): Promise<string> {
  const template = `punctual_template_${await migrationsHash()}`;
  const exists = await withClient(
    testServerUrl(),
    async (client) => (await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [template])).rowCount === 1,
  );
  if (exists) return template;
  const building = `${template}_building_${randomBytes(4).toString("hex")}`;
  await withClient(testServerUrl(), (client) => client.query(`CREATE DATABASE "${building}"`));
  await migrateDatabase(urlForDatabase(building));
  await withClient(testServerUrl(), async (client) => {
    // Another run may have finished the same template meanwhile; keep the first one.
    try {
      await client.query(`ALTER DATABASE "${building}" RENAME TO "${template}"`);
    } catch {
      await client.query(`DROP DATABASE IF EXISTS "${building}"`);
    }
  });
  return template;
}

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database of its own for one test file. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const template = await prepareTemplateDatabase();
  const name = `punctual_test_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  // Copying a template fails while another session is connected to it; retry briefly.
  for (let attempt = 0; ; attempt++) {
    try {
      await withClient(testServerUrl(), (client) => client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
      break;
    } catch (error) {
      if (attempt >= 20) throw error;
      await new Promise((resolveWait) => setTimeout(resolveWait, 100));
    }
  }
  return {
    url: urlForDatabase(name),
    name,
    drop: () =>
      withClient(testServerUrl(), (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(
        () => {},
      ),
  };
}

/** An empty database (no tables), for testing the migrations themselves. */
export async function createEmptyDatabase(): Promise<TestDatabase> {
  const name = `punctual_empty_${Date.now().toString(36)}_${randomBytes(4).toString("hex")}`;
  await withClient(testServerUrl(), (client) => client.query(`CREATE DATABASE "${name}"`));
  return {
    url: urlForDatabase(name),
    name,
    drop: () =>
      withClient(testServerUrl(), (client) => client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`)).then(
        () => {},
      ),
  };
}
