import { randomBytes } from "node:crypto";
import { createDb, type Db } from "@punctual/db";
import { urlForDatabase, withClient } from "@punctual/db/testing";
import { afterEach, describe, expect, it } from "vitest";
import { freePort, refusesConnections } from "../../../test/support/processes.ts";
import { runCliCapturing } from "./run-cli.ts";

// The first run of `pnpm admin` often meets a database that is not running or not migrated. The
// operator gets one line with the reason and what to do, not Prisma's dozen lines of our source.

const opened: Db[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((db) => db.$disconnect()));
});

async function cliAgainst(url: string, ...argv: string[]) {
  return runCliCapturing(argv, () => {
    const db = createDb(url, { poolSize: 1 });
    opened.push(db);
    return { db, config: { MAX_ORGS_PER_ACCOUNT: 5, SIGNING_SECRET_OVERLAP_MS: 86_400_000 } };
  });
}

describe("database failures", () => {
  it("a server that refuses connections: the address and a hint, exit 1", async () => {
    const port = await freePort();
    expect(await refusesConnections(port)).toBe(true);
    const result = await cliAgainst(`postgresql://postgres@127.0.0.1:${port}/punctual`, "org:list");
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: Can't reach database server at 127.0.0.1:${port} (is Postgres running, and is DATABASE_URL right?)\n`,
    });
  });

  it("a database that does not exist: pnpm db:migrate is named, exit 1", async () => {
    const name = `punctual_missing_${randomBytes(6).toString("hex")}`;
    const result = await cliAgainst(urlForDatabase(name), "key:list", "--org", "org_doesnotexist");
    expect(result).toEqual({
      code: 1,
      stdout: "",
      stderr: `error: database "${name}" does not exist (run pnpm db:migrate first)\n`,
    });
  });

  it("a database without the tables: pnpm db:migrate is named, exit 1", async () => {
    const name = `punctual_empty_${randomBytes(6).toString("hex")}`;
    await withClient(urlForDatabase("postgres"), (client) => client.query(`CREATE DATABASE ${name}`));
    try {
      const result = await cliAgainst(urlForDatabase(name), "org:create", "--email", "a@example.com", "--name", "A");
      expect(result.code).toBe(1);
      expect(result.stdout).toBe("");
      expect(result.stderr).toMatch(
        /^error: (The table `public\.\w+` does not exist in the current database|relation "\w+" does not exist) \(run pnpm db:migrate first\)\n$/,
      );
    } finally {
      await Promise.all(opened.splice(0).map((db) => db.$disconnect()));
      await withClient(urlForDatabase("postgres"), (client) => client.query(`DROP DATABASE IF EXISTS ${name}`));
    }
  });
});
