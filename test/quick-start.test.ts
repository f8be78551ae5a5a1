import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { testRedisUrl } from "./support/context.ts";
import {
  exitOf,
  freePort,
  repositoryRoot,
  type ServiceProcess,
  spawnProcess,
  waitForHttp,
} from "./support/processes.ts";

// The README's quick start, as a newcomer runs it: a fresh clone of the repository, `.env` copied
// from `.env.example`, then the README's own commands, block by block, in a shell that has none of
// Punctual's settings exported. The only changes made to what the README says keep this run apart
// from anything else on the machine: the database name, the queue prefix and the three ports.

const QUICK_START_HEADING = "## Quick start";
/** A command that does not return (a server): the README marks it with this comment. */
const KEEPS_RUNNING = "# keeps running";

/** The `sh` code blocks of the README's quick start, up to its Docker variant. */
function quickStartBlocks(readme: string): string[] {
  const start = readme.indexOf(QUICK_START_HEADING);
  const end = readme.indexOf("### With Docker", start);
  if (start < 0 || end < 0) throw new Error("The README has no quick start section");
  const section = readme.slice(start, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] as string);
}

/** The environment of a new terminal: no DATABASE_URL, PORT or any other setting of Punctual. */
function newTerminalEnvironment(): NodeJS.ProcessEnv {
  const keep = ["PATH", "HOME", "TMPDIR", "LANG", "TERM", "PNPM_HOME", "npm_config_store_dir", "CI"];
  return Object.fromEntries(keep.filter((name) => process.env[name] !== undefined).map((n) => [n, process.env[n]]));
}

/** Runs one block in bash, in the clone, as its own process group (a server it starts included). */
function runBlock(cwd: string, script: string): ServiceProcess {
  return spawnProcess("bash", ["-euo", "pipefail", "-c", script], {
    cwd,
    env: newTerminalEnvironment(),
    detached: true,
  });
}

describe("the README's quick start", () => {
  const work = mkdtempSync(path.join(tmpdir(), "punctual-quick-start-"));
  const clone = path.join(work, "punctual");
  const database = `punctual_quick_start_${randomBytes(4).toString("hex")}`;
  const queuePrefix = `quick-start-${randomBytes(4).toString("hex")}`;
  const running: ServiceProcess[] = [];

  afterAll(async () => {
    await Promise.all(running.map((shell) => shell.stop()));
    const admin = new pg.Client({ connectionString: "postgresql://postgres@127.0.0.1:5432/postgres" });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await admin.end();
    const redis = new Redis(testRedisUrl());
    const keys = await redis.keys(`${queuePrefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    rmSync(work, { recursive: true, force: true });
  });

  it("reaches a delivery whose signature the receiver verified, from a fresh clone", { timeout: 300_000 }, async () => {
    execFileSync("git", ["clone", "--quiet", repositoryRoot, clone]);
    const readme = readFileSync(path.join(clone, "README.md"), "utf8");
    const blocks = quickStartBlocks(readme);
    expect(blocks).toHaveLength(3);

    const [apiPort, healthPort, receiverPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const ports = (script: string) =>
      script.replaceAll("localhost:3000", `localhost:${apiPort}`).replaceAll("4000", String(receiverPort));

    // Block 1: install, `.env` from the example, migrate, start. Before `pnpm start` runs, the
    // copied `.env` gets this run's own database, queue prefix and ports.
    const [setup = "", start = ""] = (blocks[0] as string).split(/^(?=pnpm start)/m);
    expect(start).toContain(KEEPS_RUNNING);
    const isolate = [
      String.raw`sed -i '/^\(DATABASE_URL\|PORT\|WORKER_HEALTH_PORT\|QUEUE_PREFIX\)=/d' .env`,
      `echo DATABASE_URL=postgresql://postgres@127.0.0.1:5432/${database} >> .env`,
      `echo PORT=${apiPort} >> .env`,
      `echo WORKER_HEALTH_PORT=${healthPort} >> .env`,
      `echo QUEUE_PREFIX=${queuePrefix} >> .env`,
    ].join("\n");
    const [install = "", rest = ""] = setup.split(/^(?=cp \.env\.example)/m);
    const [copy = "", migrate = ""] = rest.split(/^(?=pnpm db:migrate)/m);
    const prepared = runBlock(clone, `${install}\n${copy}\n${isolate}\n${migrate}`);
    const preparedStatus = await exitOf(prepared);
    expect(preparedStatus, prepared.output()).toBe(0);
    const env = readFileSync(path.join(clone, ".env"), "utf8");
    expect(env).toContain(`DATABASE_URL=postgresql://postgres@127.0.0.1:5432/${database}`);
    expect(env).toContain(`QUEUE_PREFIX=${queuePrefix}`);

    const server = runBlock(clone, start);
    running.push(server);
    await waitForHttp(`http://127.0.0.1:${apiPort}/readyz`, 120_000);
    // Log lines reach the terminal within 200 ms (they are written in batches).
    await expect.poll(() => server.output()).toContain(`http://127.0.0.1:${apiPort}`);

    // Block 2: an organization, and the receiver with its signing secret.
    const receiver = runBlock(clone, ports(blocks[1] as string));
    running.push(receiver);
    await expect.poll(() => receiver.output(), { timeout: 60_000 }).toMatch(/listening/i);
    const org = JSON.parse(readFileSync(path.join(clone, ".punctual", "org.json"), "utf8")) as Record<string, string>;
    expect(org.apiKey).toMatch(/^pk_/);

    // Block 3: the event, then its record after the delivery.
    const client = runBlock(clone, ports(blocks[2] as string));
    const clientStatus = await exitOf(client);
    expect(clientStatus, client.output()).toBe(0);
    const event = JSON.parse(readFileSync(path.join(clone, ".punctual", "event.json"), "utf8")) as { id: string };
    const delivered = JSON.parse(client.output()) as {
      id: string;
      status: string;
      history: { responseStatus: number | null }[];
    };
    expect(delivered).toMatchObject({ id: event.id, status: "Sent" });
    expect(delivered.history.map((attempt) => attempt.responseStatus)).toEqual([200]);
    // The receiver answers 200 only to a delivery whose signature it verified, and says so.
    expect(receiver.output()).toMatch(new RegExp(`^valid ${event.id} `, "m"));
    expect(receiver.output()).not.toMatch(/^invalid/m);
  });
});
