import { type DatabaseProbe, probeDatabase } from "@punctual/db";
import { Redis } from "ioredis";
import type { Config, RedisClusterSettings } from "./config.ts";
import { StartupError } from "./startup-error.ts";

/** How long a start waits for Postgres or Redis to answer before it gives up. */
export const STARTUP_CHECK_TIMEOUT_MS = 3_000;

/** A connection URL fit for a message: the password (in the user part or the query) masked. */
export function redactUrl(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password) url.password = "****";
    for (const key of ["password", "sslpassword"]) if (url.searchParams.has(key)) url.searchParams.set(key, "****");
    return url.toString();
  } catch {
    return "(DATABASE_URL or REDIS_URL is not a URL)";
  }
}

/** The one-line message of a Postgres problem found by `probeDatabase`; undefined when ready. */
export function postgresProblem(url: string, probe: DatabaseProbe): string | undefined {
  const shown = redactUrl(url);
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.slice(1));
  switch (probe.status) {
    case "ready":
      return undefined;
    case "unreachable":
      return `Cannot reach Postgres at ${shown} (DATABASE_URL): ${probe.reason}. Is it running? Start it, or set DATABASE_URL in .env.`;
    case "login-refused":
      return `Postgres at ${shown} (DATABASE_URL) refused the login: ${probe.reason}. Check the user and password in DATABASE_URL.`;
    case "missing":
      return `Database "${database}" does not exist on the Postgres server at ${shown} (DATABASE_URL): run pnpm db:migrate (it creates the database and its tables).`;
    case "not-migrated": {
      const count = probe.pending.length;
      const what = probe.empty ? "has no tables yet" : `lacks ${count} migration${count === 1 ? "" : "s"}`;
      return `Database "${database}" at ${shown} (DATABASE_URL) ${what}: run pnpm db:migrate.`;
    }
  }
}

const REDIS_CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "no answer in time",
};

/** Why Redis at `url` cannot be used, or undefined when it answers a PING within `timeoutMs`. */
async function redisProblem(url: string, timeoutMs: number, setting = "REDIS_URL"): Promise<string | undefined> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    // One attempt: the failure is reported, not retried in the background.
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
  });
  // connect() rejects with a bare "Connection is closed."; the cause is the error emitted before it.
  let emitted: unknown;
  redis.on("error", (error) => {
    emitted ??= error;
  });
  try {
    await redis.connect();
    await redis.ping();
    return undefined;
  } catch (thrown) {
    const error = emitted ?? thrown;
    const code = (error as NodeJS.ErrnoException).code;
    const message = error instanceof Error ? error.message : String(error);
    const reason =
      (code && REDIS_CONNECTION_ERRORS[code]) ??
      (/timed? ?out/i.test(message) ? `no answer within ${timeoutMs / 1000} s` : message);
    if (/NOAUTH|WRONGPASS|invalid password|invalid username/i.test(message)) {
      return `Redis at ${redactUrl(url)} (${setting}) refused the login: ${message}. Check the user and password in ${setting}.`;
    }
    return `Cannot reach Redis at ${redactUrl(url)} (${setting}): ${reason}. Is it running? Start it, or set ${setting} in .env.`;
  } finally {
    redis.disconnect();
  }
}

/**
 * Why no seed node of the cluster can be used (one line per node), or undefined when one answers (the client learns
 * the others from it). Each node is probed as a single server with the cluster's credentials.
 */
async function clusterProblem(cluster: RedisClusterSettings, timeoutMs: number): Promise<string | undefined> {
  const scheme = cluster.tls ? "rediss" : "redis";
  const user = cluster.username === undefined ? "" : encodeURIComponent(cluster.username);
  const auth = cluster.password === undefined ? "" : `${user}:${encodeURIComponent(cluster.password)}@`;
  const problems = await Promise.all(
    cluster.nodes.map((node) =>
      redisProblem(
        `${scheme}://${auth}${node.host.includes(":") ? `[${node.host}]` : node.host}:${node.port}`,
        timeoutMs,
        "REDIS_CLUSTER_NODES",
      ),
    ),
  );
  return problems.some((problem) => problem === undefined) ? undefined : problems.join("\n");
}

/**
 * Checks, before a process starts anything, that Postgres (reachable, database there, migrated)
 * and Redis (reachable) can be used, each within `timeoutMs`. Throws a StartupError with one line
 * per problem.
 */
export async function checkDependencies(
  config: Pick<Config, "DATABASE_URL" | "REDIS_URL"> & Partial<Pick<Config, "REDIS_CLUSTER_NODES">>,
  timeoutMs: number = STARTUP_CHECK_TIMEOUT_MS,
): Promise<void> {
  const [database, redis] = await Promise.all([
    probeDatabase(config.DATABASE_URL, timeoutMs).then((probe) => postgresProblem(config.DATABASE_URL, probe)),
    config.REDIS_CLUSTER_NODES
      ? clusterProblem(config.REDIS_CLUSTER_NODES, timeoutMs)
      : redisProblem(config.REDIS_URL, timeoutMs),
  ]);
  const problems = [database, redis].filter((problem) => problem !== undefined);
  if (problems.length > 0) throw new StartupError(problems.join("\n"));
}
