import { execFile, spawn } from "node:child_process";
import { chmod, chown, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { Redis } from "ioredis";
import { freePort } from "./processes.ts";

// Servers of a test's own, on free ports, for scenarios that stop, flush or restart them without
// touching the shared Postgres and Redis.

const run = promisify(execFile);

export interface OwnRedis {
  url: string;
  port: number;
  start(): Promise<void>;
  /** Stops the server at once (no save), as a crash or an outage would. */
  stop(): Promise<void>;
  flushAll(): Promise<void>;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "punctual-redis-"));
  const ping = async () => {
    const client = new Redis({
      port,
      host: "127.0.0.1",
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on("error", () => {});
    try {
      await client.connect();
      return (await client.ping()) === "PONG";
    } finally {
      client.disconnect();
    }
  };
  const self: OwnRedis = {
    url: `redis://127.0.0.1:${port}`,
    port,
    async start() {
      const child = spawn(
        "redis-server",
        ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
        { stdio: "ignore", detached: false },
      );
      child.unref();
      await waitFor(ping, `redis on ${port}`);
    },
    async stop() {
      await run("redis-cli", ["-p", String(port), "shutdown", "nosave"]).catch(() => {});
      await waitFor(
        () =>
          ping().then(
            (up) => !up,
            () => true,
          ),
        `redis on ${port} stopping`,
      );
    },
    async flushAll() {
      await run("redis-cli", ["-p", String(port), "flushall"]);
    },
  };
  await self.start();
  return self;
}

export interface OwnPostgres {
  /** A URL of the server with the given database name. */
  url(database: string): string;
  port: number;
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const PG_BIN = async () => {
  const { stdout } = await run("ls", ["/usr/lib/postgresql"]);
  const version = stdout.trim().split("\n").sort().at(-1);
  return `/usr/lib/postgresql/${version}/bin`;
};

/**
 * A throwaway Postgres cluster (initdb in a temporary folder, trust auth). Postgres refuses to run as
 * root, so when the tests run as root the cluster is owned by and run as the `postgres` user.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = await PG_BIN();
  const port = await freePort();
  const dir = await mkdtemp(join(tmpdir(), "punctual-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const { stdout } = await run("id", ["-u", "postgres"]);
    const { stdout: group } = await run("id", ["-g", "postgres"]);
    await chown(dir, Number(stdout.trim()), Number(group.trim()));
    await chmod(dir, 0o700);
  }
  const pgCommand = (command: string, args: string[]) =>
    asRoot ? run("runuser", ["-u", "postgres", "--", join(bin, command), ...args]) : run(join(bin, command), args);
  await pgCommand("initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  // The server's output goes to a log file: on the caller's pipes it would keep them open forever.
  const ctl = (action: string, ...extra: string[]) =>
    pgCommand("pg_ctl", [
      "-D",
      data,
      "-l",
      join(dir, "log"),
      "-o",
      `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${dir} -c fsync=off`,
      "-w",
      ...extra,
      action,
    ]);
  await ctl("start");
  return {
    port,
    url: (database) => `postgresql://postgres@127.0.0.1:${port}/${database}`,
    async restart() {
      await ctl("restart", "-m", "fast");
    },
    async stop() {
      await ctl("stop", "-m", "immediate").catch(() => {});
      await rm(dir, { recursive: true, force: true });
    },
  };
}
