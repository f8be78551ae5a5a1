import { createServer, type Server } from "node:net";
import { createEmptyDatabase, urlForDatabase } from "@punctual/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext, testRedisUrl } from "../support/context.ts";
import { freePort } from "../support/processes.ts";
import { logMessages, runEntryPoint, startEntryPoint, workingDirectory } from "./entry-point.ts";

// A start that cannot succeed stops before doing anything, with one line saying what to fix, exit
// code 1 and no stack trace.

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext();
});
afterAll(async () => {
  await context.close();
});

/**
 * How long one entry point may take to stop: it is started through tsx, which compiles it first,
 * seconds on a loaded machine (the claims are the line and the exit code, not the time).
 */
const STOP_WITHIN_MS = 30_000;

/** Settings under which every entry point can start; a test replaces the one it breaks. */
async function settings(overrides: Record<string, string> = {}): Promise<Record<string, string>> {
  return {
    DATABASE_URL: context.config.DATABASE_URL,
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: context.config.QUEUE_PREFIX,
    HOST: "127.0.0.1",
    PORT: String(await freePort()),
    WORKER_HEALTH_PORT: String(await freePort()),
    LOG_LEVEL: "info",
    ...overrides,
  };
}

/** Runs an entry point in a directory whose .env holds `env`, to its exit. */
async function run(script: string, env: Record<string, string>) {
  const cwd = await workingDirectory(env);
  try {
    return await runEntryPoint(script, cwd.dir);
  } finally {
    await cwd.remove();
  }
}

/** A port something else listens on, for the test's duration. */
async function takenPort(): Promise<{ port: number; server: Server }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  return { port: typeof address === "object" && address ? address.port : 0, server };
}

describe("a port in use", () => {
  it.each([
    ["stops the API with one line naming PORT", "services/api/src/main.ts", "PORT"],
    ["stops the worker with one line naming WORKER_HEALTH_PORT", "services/worker/src/main.ts", "WORKER_HEALTH_PORT"],
    [
      "stops pnpm start (API and worker in one process) when the worker's port is taken",
      "scripts/start-all.ts",
      "WORKER_HEALTH_PORT",
    ],
  ])(
    "%s",
    async (_title, script, variable) => {
      const { port, server } = await takenPort();
      try {
        const result = await run(script, await settings({ [variable]: String(port) }));
        expect(result.code).toBe(1);
        expect(result.stderr).toBe(
          `Port ${port} is already in use (${variable}). Stop the other process or set ${variable} in .env.\n`,
        );
        expect(result.stdout).toBe("");
      } finally {
        server.close();
      }
    },
    STOP_WITHIN_MS,
  );
});

describe("Postgres", () => {
  it(
    "out of reach stops the API with one line, the password masked",
    async () => {
      const closed = await freePort();
      const url = `postgresql://postgres:s3cret@127.0.0.1:${closed}/punctual`;
      const result = await run("services/api/src/main.ts", await settings({ DATABASE_URL: url }));
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `Cannot reach Postgres at postgresql://postgres:****@127.0.0.1:${closed}/punctual (DATABASE_URL): connection refused. Is it running? Start it, or set DATABASE_URL in .env.\n`,
      );
    },
    STOP_WITHIN_MS,
  );

  it(
    "without the database stops the API, saying to run pnpm db:migrate",
    async () => {
      const url = urlForDatabase(`punctual_missing_${Date.now().toString(36)}`);
      const result = await run("services/api/src/main.ts", await settings({ DATABASE_URL: url }));
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(
        /^Database "punctual_missing_\w+" does not exist on the Postgres server at postgresql:\/\/\S+ \(DATABASE_URL\): run pnpm db:migrate \(it creates the database and its tables\)\.\n$/,
      );
    },
    STOP_WITHIN_MS,
  );

  it(
    "with a database not migrated stops the worker, saying to run pnpm db:migrate",
    async () => {
      const empty = await createEmptyDatabase();
      try {
        const result = await run("services/worker/src/main.ts", await settings({ DATABASE_URL: empty.url }));
        expect(result.code).toBe(1);
        expect(result.stderr).toBe(
          `Database "${empty.name}" at ${empty.url} (DATABASE_URL) has no tables yet: run pnpm db:migrate.\n`,
        );
      } finally {
        await empty.drop();
      }
    },
    STOP_WITHIN_MS,
  );
});

describe("Redis", () => {
  it(
    "out of reach stops the worker with one line",
    async () => {
      const closed = await freePort();
      const result = await run(
        "services/worker/src/main.ts",
        await settings({ REDIS_URL: `redis://127.0.0.1:${closed}` }),
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `Cannot reach Redis at redis://127.0.0.1:${closed} (REDIS_URL): connection refused. Is it running? Start it, or set REDIS_URL in .env.\n`,
      );
    },
    STOP_WITHIN_MS,
  );
});

describe("pnpm start (API and worker in one process)", () => {
  it("announces the API's address and the worker's health address", async () => {
    // The announcement is the subject, not the worker's warm-up, which beside the other test files
    // on two cores can take most of a default poll.
    const env = await settings({ WORKER_WARMUP_REQUESTS: "0" });
    const cwd = await workingDirectory(env);
    const start = startEntryPoint("scripts/start-all.ts", cwd.dir);
    try {
      const line = `API listening on http://127.0.0.1:${env.PORT}, worker health on http://127.0.0.1:${env.WORKER_HEALTH_PORT}/healthz`;
      await expect.poll(() => logMessages(start.stdout()), { timeout: 20_000 }).toContain(line);
      expect((await fetch(`http://127.0.0.1:${env.WORKER_HEALTH_PORT}/healthz`)).status).toBe(200);
      expect(await start.stop()).toBe(0);
    } finally {
      await start.stop();
      await cwd.remove();
    }
  }, 30_000);
});
