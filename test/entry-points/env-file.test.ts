import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext, testRedisUrl } from "../support/context.ts";
import { freePort, repositoryRoot } from "../support/processes.ts";
import { logMessages, startEntryPoint, workingDirectory } from "./entry-point.ts";

// Every entry point reads the .env of its working directory; a variable of the real environment
// wins over the file.

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext();
});
afterAll(async () => {
  await context.close();
});

/** Settings of a working API on this file's database and queues, as a .env would hold them. */
function apiSettings(port: number): Record<string, string> {
  return {
    DATABASE_URL: context.config.DATABASE_URL,
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: context.config.QUEUE_PREFIX,
    HOST: "127.0.0.1",
    PORT: String(port),
    LOG_LEVEL: "info",
  };
}

describe("the API entry point", () => {
  it("takes its settings from .env in the working directory and announces its address", async () => {
    const port = await freePort();
    const cwd = await workingDirectory(apiSettings(port));
    const api = startEntryPoint("services/api/src/main.ts", cwd.dir);
    try {
      await expect
        .poll(() => logMessages(api.stdout()), { timeout: 8_000 })
        .toContain(`API listening on http://127.0.0.1:${port}`);
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(200);
      expect(await api.stop()).toBe(0);
    } finally {
      await api.stop();
      await cwd.remove();
    }
  }, 10_000);

  it("lets a variable of the real environment win over the same one in .env", async () => {
    const [filePort, realPort] = [await freePort(), await freePort()];
    const cwd = await workingDirectory(apiSettings(filePort));
    const api = startEntryPoint("services/api/src/main.ts", cwd.dir, { PORT: String(realPort) });
    try {
      await expect
        .poll(() => logMessages(api.stdout()), { timeout: 8_000 })
        .toContain(`API listening on http://127.0.0.1:${realPort}`);
      expect((await fetch(`http://127.0.0.1:${realPort}/healthz`)).status).toBe(200);
      await expect(fetch(`http://127.0.0.1:${filePort}/healthz`)).rejects.toThrow();
    } finally {
      await api.stop();
      await cwd.remove();
    }
  }, 10_000);
});

describe("pnpm db:migrate", () => {
  it("takes DATABASE_URL from .env, and says in one line when Postgres is out of reach", async () => {
    const closed = await freePort();
    const cwd = await workingDirectory({ DATABASE_URL: `postgresql://postgres:s3cret@127.0.0.1:${closed}/punctual` });
    try {
      const run = startEntryPoint("scripts/migrate.ts", cwd.dir);
      expect(await run.exited).toBe(1);
      expect(run.stderr()).toBe(
        `Cannot reach Postgres at postgresql://postgres:****@127.0.0.1:${closed}/punctual (DATABASE_URL): connection refused. Is it running? Start it, or set DATABASE_URL in .env.\n`,
      );
    } finally {
      await cwd.remove();
    }
  }, 10_000);
});

describe("the Prisma CLI (prisma.config.ts)", () => {
  it("takes DATABASE_URL from .env in the working directory", async () => {
    const cwd = await workingDirectory({ DATABASE_URL: context.config.DATABASE_URL });
    const { DATABASE_URL: _exported, ...env } = process.env;
    try {
      const { stdout } = await promisify(execFile)(
        join(repositoryRoot, "node_modules/.bin/prisma"),
        ["migrate", "status", "--config", join(repositoryRoot, "prisma.config.ts")],
        { cwd: cwd.dir, env: { ...env, CHECKPOINT_DISABLE: "1" } },
      );
      expect(stdout).toContain("Database schema is up to date!");
    } finally {
      await cwd.remove();
    }
  }, 10_000);
});
