import { isIP } from "node:net";
import { z } from "zod";

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const nonNegativeInt = (fallback: number) => z.coerce.number().int().nonnegative().default(fallback);

/** A comma-separated list of non-negative millisecond delays, e.g. "3000,5000,10000". */
const delayList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const trimmed = text.trim();
      if (trimmed === "") return [];
      const delays = trimmed.split(",").map((part) => Number(part.trim()));
      if (delays.some((delay) => !Number.isInteger(delay) || delay < 0)) {
        ctx.addIssue({ code: "custom", message: "must be a comma-separated list of whole milliseconds" });
        return z.NEVER;
      }
      return delays;
    });

/** Express's names of address ranges, accepted in TRUST_PROXY as in its `trust proxy` setting. */
const PROXY_RANGE_NAMES = new Set(["loopback", "linklocal", "uniquelocal"]);

/** An IP address, an address with a prefix length (`10.0.0.0/8`, `fd00::/8`) or a range name. */
function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGE_NAMES.has(entry)) return true;
  const [address = "", prefix, ...rest] = entry.split("/");
  const version = isIP(address);
  if (version === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128);
}

/**
 * Which peers may name the client in `X-Forwarded-For` (Express's `trust proxy`): `false` (or empty,
 * or 0) trusts none, a number trusts that many proxy hops in front of the API, a list trusts the
 * proxies at those addresses. Never "every peer": any client could then pick its own address, and
 * with it a fresh rate-limit budget or someone else's block.
 */
const trustProxy = () =>
  z
    .string()
    .default("false")
    .transform((text, ctx): false | number | string[] => {
      const trimmed = text.trim();
      if (trimmed === "" || trimmed === "false" || trimmed === "0") return false;
      if (/^\d+$/.test(trimmed)) return Number(trimmed);
      const entries = trimmed.split(",").map((entry) => entry.trim());
      if (entries.every(isProxyAddress)) return entries;
      ctx.addIssue({
        code: "custom",
        message:
          "must be false, a number of proxy hops, or a comma-separated list of proxy addresses or CIDRs (e.g. 10.0.0.0/8,127.0.0.1)",
      });
      return z.NEVER;
    });

/** The seed nodes of a Redis Cluster and what every node is reached with. */
export interface RedisClusterSettings {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
  /** `rediss://` given: every node is reached over TLS. */
  tls: boolean;
}

/**
 * REDIS_CLUSTER_NODES: comma-separated `host:port` seed nodes, optionally after a `redis://` or
 * `rediss://` (TLS) scheme with the credentials every node shares, e.g.
 * `rediss://punctual:s3cret@10.0.0.1:6379,10.0.0.2:6379`. The client learns the other nodes from them.
 */
const redisClusterNodes = () =>
  z.string().transform((text, ctx): RedisClusterSettings | undefined => {
    let rest = text.trim();
    if (rest === "") return undefined;
    const scheme = /^(rediss?):\/\//.exec(rest);
    let username: string | undefined;
    let password: string | undefined;
    if (scheme) {
      rest = rest.slice(scheme[0].length);
      const at = rest.lastIndexOf("@");
      if (at >= 0) {
        const [user = "", ...secret] = rest.slice(0, at).split(":");
        username = user === "" ? undefined : decodeURIComponent(user);
        password = secret.length > 0 ? decodeURIComponent(secret.join(":")) : undefined;
        rest = rest.slice(at + 1);
      }
    }
    const nodes = rest.split(",").map((entry) => {
      const match = /^\[?([^\s/@[\]]+?)\]?:(\d{1,5})$/.exec(entry.trim());
      const port = Number(match?.[2]);
      return match?.[1] && port > 0 && port <= 65535 ? { host: match[1], port } : undefined;
    });
    if (nodes.some((node) => node === undefined)) {
      ctx.addIssue({
        code: "custom",
        message:
          "must be a comma-separated list of host:port seed nodes, optionally after redis:// or rediss:// with credentials (e.g. rediss://user:password@10.0.0.1:6379,10.0.0.2:6379)",
      });
      return z.NEVER;
    }
    return {
      nodes: nodes as RedisClusterSettings["nodes"],
      ...(username === undefined ? {} : { username }),
      ...(password === undefined ? {} : { password }),
      tls: scheme?.[1] === "rediss",
    };
  });

/** WORKER_SHARDS: a comma-separated list of shard indexes, e.g. "0,2" (checked against QUEUE_SHARDS). */
const shardList = () =>
  z.string().transform((text, ctx): number[] | undefined => {
    const trimmed = text.trim();
    if (trimmed === "") return undefined;
    const shards = trimmed.split(",").map((part) => part.trim());
    if (shards.some((shard) => !/^\d{1,4}$/.test(shard))) {
      ctx.addIssue({ code: "custom", message: "must be a comma-separated list of shard indexes, e.g. 0,2" });
      return z.NEVER;
    }
    return [...new Set(shards.map(Number))].sort((a, b) => a - b);
  });

/**
 * The hash tag of a key prefix as Redis Cluster reads it: what lies between the first `{` and the
 * first `}` after it, when not empty. Every key under a prefix with a hash tag is in one slot.
 */
export function hashTagOf(prefix: string): string | undefined {
  const open = prefix.indexOf("{");
  if (open < 0) return undefined;
  const close = prefix.indexOf("}", open + 1);
  return close > open + 1 ? prefix.slice(open + 1, close) : undefined;
}

const urlWithProtocol = (protocols: string[], fallback?: string) => {
  const base = z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol);
      } catch {
        return false;
      }
    },
    { message: `must be a URL starting with ${protocols.map((p) => `${p}//`).join(" or ")}` },
  );
  return fallback === undefined ? base : base.default(fallback);
};

/**
 * Parts of the well-known placeholder tokens (matched case-insensitively): a token copied from an
 * example or a compose file is public, so a deployment must not start with one.
 */
const PLACEHOLDER_PARTS = [
  "change-me",
  "changeme",
  "change_me",
  "password",
  "secret",
  "admin",
  "example",
  "placeholder",
  "xxxxxxxx",
  "12345678",
];

/**
 * The admin token, from ADMIN_TOKEN or ADMIN_TOKEN_FILE. Messages never repeat the token: they end
 * up in logs.
 */
export const AdminTokenSchema = z
  .string()
  .min(16, "must be at least 16 characters")
  .refine((token) => !/^(.)\1*$/su.test(token), "must not be one character repeated")
  .superRefine((token, ctx) => {
    const lower = token.toLowerCase();
    const part = PLACEHOLDER_PARTS.find((word) => lower.includes(word));
    if (part) {
      ctx.addIssue({
        code: "custom",
        message: `must not be a placeholder (it contains '${part}'); use a random value, e.g. \`openssl rand -base64 32\``,
      });
    }
  });

/**
 * ENQUEUE_HORIZON_MS must leave room for a few reconciler runs (one may be slow or skipped) between
 * an event entering the horizon, when the next run queues it, and its job's due time,
 * PREPARE_AHEAD_MS before the event: a shorter horizon would queue events late.
 */
function horizonCheck(
  config: { ENQUEUE_HORIZON_MS: number; PREPARE_AHEAD_MS: number; RECONCILE_INTERVAL_MS: number },
  ctx: z.RefinementCtx,
): void {
  const minimum = config.PREPARE_AHEAD_MS + Math.max(4 * config.RECONCILE_INTERVAL_MS, 5_000);
  if (config.ENQUEUE_HORIZON_MS > minimum) return;
  ctx.addIssue({
    code: "custom",
    path: ["ENQUEUE_HORIZON_MS"],
    message: `must be more than PREPARE_AHEAD_MS + max(4 × RECONCILE_INTERVAL_MS, 5000) = ${minimum} ms, so that the reconciler queues an event entering the horizon before its job is due`,
  });
}

/**
 * Every setting of every Punctual process, read from the environment once at start.
 * Limits default to the reference's values (contract §7).
 */
export const ConfigSchema = z
  .object({
    DATABASE_URL: urlWithProtocol(["postgres:", "postgresql:"], "postgresql://postgres@127.0.0.1:5432/punctual"),
    DATABASE_POOL_SIZE: positiveInt(10),
    REDIS_URL: urlWithProtocol(["redis:", "rediss:"], "redis://127.0.0.1:6379"),
    /**
     * Seed nodes of a Redis Cluster (see redisClusterNodes). Set: every connection is a cluster
     * connection, REDIS_URL must be unset and QUEUE_PREFIX must hold a hash tag such as {punctual}.
     */
    REDIS_CLUSTER_NODES: redisClusterNodes().optional(),
    PORT: z.coerce.number().int().min(0).max(65535).default(3000),
    HOST: z.string().min(1).default("0.0.0.0"),
    QUEUE_PREFIX: z
      .string()
      .regex(/^[A-Za-z0-9_{}.-]+$/, "must contain only letters, digits and _ { } . -")
      .default("punctual"),
    /**
     * Event queues, each under its own hash tag derived from QUEUE_PREFIX (see eventQueuePrefixes):
     * on Redis Cluster they spread the events' jobs over the masters. 1 keeps the single queue.
     */
    QUEUE_SHARDS: z.coerce.number().int().min(1).max(1024, "must be at most 1024").default(1),
    /** The event shards this worker process consumes (comma-separated indexes); unset: all of them. */
    WORKER_SHARDS: shardList().optional(),
    /** Bearer token of the admin HTTP API and Bull Board; both are disabled while it is unset. */
    ADMIN_TOKEN: AdminTokenSchema.optional(),
    /**
     * Where the API keeps its admin token when ADMIN_TOKEN is unset: read at start, or generated
     * there (once, mode 0600) when the file does not exist. Unset with ADMIN_TOKEN: no admin API.
     */
    ADMIN_TOKEN_FILE: z.string().min(1).optional(),
    ALLOW_PRIVATE_DESTINATIONS: z.stringbool().default(false),
    LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
    LOG_FORMAT: z.enum(["auto", "json", "pretty"]).default("auto"),

    RATE_LIMIT_PER_MINUTE: positiveInt(100),
    /** How long a client that went over RATE_LIMIT_PER_MINUTE is refused (429) before it may try again. */
    RATE_LIMIT_BLOCK_SECONDS: positiveInt(60),
    /**
     * Failed admin logins (wrong token on the admin API or Bull Board) a client address may make per
     * minute; the one that reaches it blocks the address from both for RATE_LIMIT_BLOCK_SECONDS.
     */
    ADMIN_AUTH_FAILURES_PER_MINUTE: positiveInt(10),
    /**
     * Test deliveries (POST /api/events/test) an organization may send per minute, on top of
     * RATE_LIMIT_PER_MINUTE: each one is an HTTP request from the API to a destination of its choosing.
     */
    TEST_DELIVERIES_PER_MINUTE: positiveInt(10),
    /**
     * How long a console sign-in (organization or operator) lasts, in seconds; the session ends
     * earlier when it is signed out, or when its API key is revoked or the admin token changes.
     */
    CONSOLE_SESSION_TTL_SECONDS: positiveInt(43_200),
    /** The proxies whose `X-Forwarded-For` names the client (see trustProxy); default: none. */
    TRUST_PROXY: trustProxy(),
    MAX_ORGS_PER_ACCOUNT: positiveInt(5),
    MAX_EVENTS_PER_MONTH: positiveInt(1000),
    MAX_PAYLOAD_BYTES: positiveInt(1024),
    MAX_CRON_JOBS_PER_ORG: positiveInt(3),
    MAX_LIST_RESULTS: positiveInt(1000),
    SEARCH_WINDOW_DAYS: positiveInt(7),
    HISTORY_DAYS: positiveInt(30),
    /**
     * Delivery attempts (HTTP requests) a worker process has in flight at once, shared fairly between
     * organizations. An attempt still unanswered after SLOW_ATTEMPT_MS stops counting here (it still
     * counts against its origin's cap), so hanging receivers cannot hold every slot.
     */
    WORKER_CONCURRENCY: positiveInt(50),
    /**
     * Jobs a worker process holds at once: prepared ahead of their time (PREPARE_AHEAD_MS), claimed and
     * waiting for their instant, in flight, or waiting for a retry. Further jobs wait in Redis.
     */
    WORKER_PREPARED_JOBS: positiveInt(20_000),
    /**
     * Requests a worker signs and sends to a receiver of its own on loopback when it starts, before it
     * takes a job, so that its first burst runs on compiled code and open database connections (0: none).
     */
    WORKER_WARMUP_REQUESTS: nonNegativeInt(3_000),
    /** Attempts in flight at once to one origin (scheme + host + port), and so its connections. */
    ORIGIN_CONCURRENCY: positiveInt(50),
    /**
     * The cap of an origin whose last attempt timed out or could not connect, until it answers again:
     * a dead receiver holds this many connections, not ORIGIN_CONCURRENCY.
     */
    ORIGIN_UNHEALTHY_CONCURRENCY: positiveInt(2),
    /**
     * How long before an event's time a worker takes its job from the queue and holds it in memory
     * (the event stays Pending: still editable and cancellable), so a burst is loaded before it is due.
     */
    PREPARE_AHEAD_MS: nonNegativeInt(30_000),
    /**
     * Destination health (contract §10.3): after this many attempts in a row to one organization's
     * origin failed by timeout, refused connection or 5xx, spanning at least BREAKER_MIN_SPAN_MS, the
     * origin is Unhealthy: its deliveries wait, and one of them is tried every BREAKER_PROBE_MS.
     */
    BREAKER_FAILURES: positiveInt(20),
    BREAKER_MIN_SPAN_MS: nonNegativeInt(60_000),
    BREAKER_PROBE_MS: positiveInt(30_000),
    /** Flows (named limits and pauses) an organization may configure (contract §10.2). */
    MAX_FLOWS_PER_ORG: positiveInt(100),
    /**
     * Deliveries a worker process holds in memory while their flow or their origin's health holds
     * them back. Beyond it, a held delivery goes back to the queue and is looked at again after
     * FLOW_RECHECK_MS: thousands waiting behind a paused flow wait in Redis, not in one heap.
     */
    FLOW_HELD_MAX: positiveInt(10_000),
    FLOW_RECHECK_MS: positiveInt(5_000),

    DELIVERY_TIMEOUT_MS: positiveInt(10_000),
    RETRY_DELAYS_MS: delayList("3000,5000,10000"),
    /**
     * The longest wait a receiver's Retry-After (on a 429 or 503 answer) may add before the next
     * attempt: it delays the retry to at least that time, capped here (contract §10.1).
     */
    RETRY_AFTER_MAX_MS: positiveInt(3_600_000),

    /**
     * How long before an event's time a worker claims it (Pending → Queued) and signs its request,
     * which then leaves exactly at scheduledTime (contract §6: at most 2 s). From the claim on the event
     * can no longer be edited or cancelled.
     */
    CLAIM_LEAD_MS: z.coerce.number().int().min(0).max(2_000, "must be at most 2000").default(1_000),
    /** A Pending event that could not be queued by scheduledTime + this grace becomes Failed To Queue. */
    QUEUE_GRACE_MS: positiveInt(3_600_000),
    /** The worker's own HTTP port for /healthz (and metrics); 0 picks a free port. */
    WORKER_HEALTH_PORT: z.coerce.number().int().min(0).max(65535).default(3001),
    /** Where the worker's health port listens; inside a container set 0.0.0.0 to reach it from outside. */
    WORKER_HEALTH_HOST: z.string().min(1).default("127.0.0.1"),
    /**
     * How long a worker's hold on a job lasts without renewal (renewed once a third of it has gone by,
     * or 55 % while a burst's attempts wait for a send slot: the worker's job feed). A worker that
     * dies loses its jobs to another worker after this (plus a third of it, how often the check runs):
     * how long a crash delays the deliveries it held. Only attempts in flight at the crash are repeated.
     */
    JOB_LOCK_MS: z.coerce.number().int().min(1_000).default(15_000),
    /**
     * How far ahead Pending events hold a job in Redis. An event due later is only in Postgres; the
     * reconciler queues it as it comes within this horizon, so Redis holds the near future, not the
     * backlog. Must leave the reconciler several runs before the job is due (see `horizonCheck`).
     */
    ENQUEUE_HORIZON_MS: positiveInt(3_600_000),
    /** How often the reconciler compares Postgres with the queues (one run at a time across workers). */
    RECONCILE_INTERVAL_MS: positiveInt(5_000),
    /** Most records the reconciler looks at per kind and run. */
    RECONCILE_BATCH_SIZE: positiveInt(1_000),
    /** How long a stopping process waits for in-flight work before it exits anyway. */
    SHUTDOWN_TIMEOUT_MS: nonNegativeInt(15_000),

    /**
     * SMTP server of the hourly failure notices (contract §8), e.g. `smtps://user:pass@mail.example.com`.
     * Unset: no notice is ever sent (the task is not even scheduled).
     */
    SMTP_URL: urlWithProtocol(["smtp:", "smtps:"]).optional(),
    /** The From of failure notices. */
    NOTIFY_FROM: z.string().trim().min(1).default("Punctual <punctual@localhost>"),
    /** How often each organization's owner may get a failure notice. */
    FAILURE_NOTICE_INTERVAL_MS: positiveInt(3_600_000),
    /**
     * How long (ms) the secret a signing-secret rotation replaced keeps signing deliveries beside the
     * new one, so receivers can switch at their own pace. 0: a rotation replaces the secret at once.
     */
    SIGNING_SECRET_OVERLAP_MS: nonNegativeInt(86_400_000),
    /** How often retention deletes old history and final events (contract §8: daily). */
    RETENTION_INTERVAL_MS: positiveInt(86_400_000),
    /** Rows deleted per statement (and per short transaction) by retention. */
    RETENTION_BATCH_SIZE: positiveInt(1_000),
    /**
     * A cron job's history: at most this many runs per job are kept (besides HISTORY_DAYS), the
     * oldest final ones deleted as new ones are made, so a job firing every second keeps a bounded
     * history. Each job's newest run is always kept (its catch-up starts from it).
     */
    CRON_RUNS_KEPT_PER_JOB: positiveInt(1_000),
    /**
     * A firing of a cron job with `catchUp: skip` whose job starts more than this after its time
     * (no worker ran, or none could take it) is missed: not delivered, not recorded. The reconciler
     * also takes a firing overdue by this much, with no run, as one the scheduler will not bring (a
     * lost scheduler or job), and catches it up (`latest`, `all`) or completes the job whose window ended.
     */
    CRON_MISSED_AFTER_MS: positiveInt(60_000),
  })
  .superRefine(horizonCheck);

export type Config = z.infer<typeof ConfigSchema>;
type Environment = Record<string, string | undefined>;

/** Problems of settings that are only wrong together, as `VARIABLE: message` lines. */
function combinationProblems(config: Config, present: Environment): string[] {
  const problems: string[] = [];
  if (config.REDIS_CLUSTER_NODES) {
    if (present.REDIS_URL !== undefined) {
      problems.push(
        "REDIS_URL: must be unset when REDIS_CLUSTER_NODES is set (the cluster's seed nodes replace it; give a password or TLS in REDIS_CLUSTER_NODES as rediss://user:password@host:port,…)",
      );
    }
    if (hashTagOf(config.QUEUE_PREFIX) === undefined) {
      problems.push(
        `QUEUE_PREFIX: must contain a hash tag such as {punctual} when REDIS_CLUSTER_NODES is set, so that each queue's keys share one cluster slot (got "${config.QUEUE_PREFIX}")`,
      );
    }
  }
  const outside = config.WORKER_SHARDS?.filter((shard) => shard >= config.QUEUE_SHARDS) ?? [];
  if (outside.length > 0) {
    problems.push(
      `WORKER_SHARDS: shard ${outside.join(", ")} does not exist: QUEUE_SHARDS=${config.QUEUE_SHARDS} makes shards 0 to ${config.QUEUE_SHARDS - 1}`,
    );
  }
  return problems;
}

/** Thrown when the environment holds a bad value; the message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Parses the environment into a Config, or throws a ConfigError naming each bad variable. */
export function loadConfig(env: Environment = process.env): Config {
  // An empty variable counts as unset, so `PORT=` falls back to the default like a missing PORT.
  const present = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined && value !== ""));
  const result = ConfigSchema.safeParse(present);
  const problems = result.success
    ? combinationProblems(result.data, present)
    : result.error.issues.map((issue) => {
        const variable = String(issue.path[0] ?? "environment");
        const given = present[variable];
        // These may hold a password: never repeated.
        const secret = variable.endsWith("_URL") || variable.endsWith("TOKEN") || variable === "REDIS_CLUSTER_NODES";
        return `${variable}: ${issue.message}${given === undefined || secret ? "" : ` (got "${given}")`}`;
      });
  if (result.success && problems.length === 0) return result.data;
  throw new ConfigError(`Invalid configuration:\n  ${problems.join("\n  ")}`);
}
