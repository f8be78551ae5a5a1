// `pnpm bench [--smoke] [--only transports|bursts|campaign|noisy|stats|horizon|volume|prepared|cron|profile [--size N] [--first]]`: the benchmark suite. Starts its own processes (receiver, raw
// BullMQ worker, Punctual workers and API), all on loopback, against a fresh database copied from the
// migrated template and a BullMQ prefix of its own, and rewrites bench/RESULTS.md. `--smoke` runs
// every measurement at N=100 in well under a minute and writes its report to a temporary folder.
// Exits non-zero when a delivery was lost or duplicated, or anything failed.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import {
  createEventQueue,
  createRedis,
  type EventJobData,
  loadConfig,
  newId,
  QUEUE_NAMES,
  systemClock,
} from "@punctual/core";
import { createTestDatabase, type TestDatabase } from "@punctual/db/testing";
import autocannon from "autocannon";
import { Queue } from "bullmq";
import type { Redis } from "ioredis";
import pg from "pg";
import { deleteKeys, testRedisUrl } from "../test/support/context.ts";
import { measureCampaign } from "./lib/campaign.ts";
import { measureCronEverySecond } from "./lib/cron.ts";
import { measureHorizon } from "./lib/horizon.ts";
import {
  cpuMs,
  freePort,
  type NodeProcess,
  repositoryRoot,
  rssBytes,
  sampleRss,
  sleep,
  startNode,
  stopAll,
  waitForHttp,
} from "./lib/processes.ts";
import { summarizeProfile } from "./lib/profile.ts";
import { type Receiver, startReceiver } from "./lib/receiver.ts";
import {
  campaignSection,
  cronSection,
  type Delivery,
  type HttpLoad,
  horizonSection,
  type MemoryPeak,
  preparedMemorySection,
  profileSection,
  type Results,
  transportSection,
  volumeSection,
  writeReport,
} from "./lib/report.ts";
import {
  type BenchOrganization,
  bookkeeping,
  insertEvents,
  insertFlows,
  insertOrganization,
  prepareListSeed,
  SEED_START,
  SEED_STEP_MS,
} from "./lib/setup.ts";
import { quantile } from "./lib/stats.ts";
import { prepareStatsSeed, STATS_SEED_END } from "./lib/stats-seed.ts";
import { compareTransports } from "./lib/transports.ts";
import { measureVolume } from "./lib/volume.ts";

const smoke = process.argv.includes("--smoke");
/**
 * `--only transports`: just the HTTP client comparison (no build, database or services);
 * `--only bursts`: the raw baseline and Punctual's bursts (with the large one), nothing after them;
 * `--only campaign`: a campaign created by POST /api/events/batch shortly before its instant, beside the same
 * burst created a minute ahead (after a worker's warm-up bursts), alone;
 * `--only noisy`: the noisy neighbour rows alone;
 * `--only stats`: GET /api/stats over the seeded delivery history alone;
 * `--only horizon`: Redis and Postgres bytes per event, and Redis memory with and without the enqueue
 * horizon (no build or services);
 * `--only volume`: Postgres at volume (claims, attempt records, GET /api/events and retention over
 * millions of events and attempts) alone;
 * `--only prepared`: live heap per prepared and per claimed event in a worker process, alone;
 * `--only cron`: a cron job firing every second on one worker (lateness, run rows, Redis keys), alone;
 * `--only profile [--size N] [--first]`: one worker's CPU profile and peak RSS over a burst of N
 * (default 1,000) after the warm-up bursts (with `--first`, the first burst after its start), alone;
 * PROFILE_NODE_ARGS adds node flags to that worker (`--trace-gc`, say), whose log is kept beside the report.
 */
const onlyIndex = process.argv.indexOf("--only");
const only = onlyIndex === -1 ? undefined : process.argv[onlyIndex + 1];
const PARTS = [
  "transports",
  "bursts",
  "campaign",
  "noisy",
  "stats",
  "horizon",
  "volume",
  "profile",
  "prepared",
  "cron",
];
const sizeIndex = process.argv.indexOf("--size");
const profileSize = sizeIndex === -1 ? undefined : Number(process.argv[sizeIndex + 1]);
if (profileSize !== undefined && !(Number.isInteger(profileSize) && profileSize > 0)) {
  throw new Error("--size must be a positive whole number of events");
}
if (only !== undefined && !PARTS.includes(only)) {
  throw new Error(`--only ${only}: only ${PARTS.map((part) => `"${part}"`).join(", ")} can be run alone`);
}
const plan = smoke
  ? {
      bursts: [100],
      throughput: 100,
      single: { count: 10, gapMs: 100 },
      warmup: { size: 0, bursts: 0 },
      idleSettleMs: 3_000,
      post: { connections: 32, seconds: 2, warmupSeconds: 0 },
      batch: { size: 100, requests: 2 },
      campaign: { batches: 2, batchSize: 100, leadMs: 3_000, aheadMs: 6_000, repeat: 1 },
      list: { rows: 2_000, requests: 20, shared: false },
      stats: { rows: 2_000, requests: 20, shared: false, neighbourFailures: 4_000 },
      profile: false,
      preparedEvents: 200,
      repeat: 1,
      receiverSeconds: 1,
      transports: { sizes: [1_000], repeat: 1, warmup: 200 },
      largeBurst: 0,
      policyBurst: 100,
      flowBurst: 100,
      noisy: undefined,
      horizon: { events: 2_000, days: 30 },
      /** A cron job firing every second, briefly: the part runs in CI's smoke run too. */
      cronSeconds: 10,
      volume: {
        events: 50_000,
        shared: false,
        batches: 10,
        warmup: 2,
        batchSize: 500,
        requests: 20,
        connections: 16,
        loadSeconds: 2,
      },
      timeLimitMs: 180_000,
    }
  : {
      bursts: [1_000, 10_000],
      throughput: 5_000,
      single: { count: 50, gapMs: 300 },
      // A worker that has run for a while: V8 has compiled its hot paths (and the receiver's). The
      // first burst after a start is reported on its own row.
      warmup: { size: 1_000, bursts: 3 },
      /**
       * How long a worker idles before its settled idle RSS is read: V8's memory reducer gives back
       * what the warm-up grew (its young generation) 15–30 s after the last work.
       */
      idleSettleMs: 60_000,
      post: { connections: 32, seconds: 10, warmupSeconds: 5 },
      /** POST /api/events/batch of `size` events, one request at a time. */
      batch: { size: 1_000, requests: 10 },
      /**
       * 10,000 events in 10 batch calls starting 15 s before the instant they share, against the same
       * burst created a minute ahead; three pairs of runs.
       */
      campaign: { batches: 10, batchSize: 1_000, leadMs: 15_000, aheadMs: 60_000, repeat: 3 },
      list: { rows: 1_000_000, requests: 200, shared: true },
      /**
       * Events (with their attempts) over 30 days; requests per window, one at a time; another
       * organization's failed attempts over the last day (in every window).
       */
      stats: { rows: 1_000_000, requests: 100, shared: true, neighbourFailures: 100_000 },
      profile: true,
      /** Events a worker holds while its live heap per prepared event is measured. */
      preparedEvents: 10_000,
      repeat: 3,
      receiverSeconds: 3,
      transports: { sizes: [1_000, 10_000], repeat: 3, warmup: 1_000 },
      /** Run once: every one delivered once, memory bounded, p99 reported. */
      largeBurst: 50_000,
      /** Events with per-event headers and a raw body, due at one instant, beside the plain bursts of the size. */
      policyBurst: 10_000,
      /** Events spread over 100 flows with limits they never reach, due at one instant, beside the plain bursts of the size. */
      flowBurst: 10_000,
      /** Organization B's hanging and slow attempts beside organization A's burst. */
      noisy: { hanging: 2_000, hangingOrigins: 20, slow: 2_000, slowAnswerMs: 5_000, burst: 1_000 },
      /** Pending events over the next 30 days: Redis memory with the horizon off and on, unit costs. */
      horizon: { events: 1_000_000, days: 30 },
      /** A cron job firing every second for 10 minutes on one worker. */
      cronSeconds: 600,
      /** 5,000,000 events with about 10,000,000 attempts over 60 days, 1,000 organizations (kept across runs). */
      volume: {
        events: 5_000_000,
        shared: true,
        batches: 50,
        warmup: 5,
        batchSize: 500,
        requests: 200,
        connections: 32,
        loadSeconds: 10,
      },
      timeLimitMs: 2_700_000,
    };
const outDir =
  smoke || only
    ? mkdtempSync(join(tmpdir(), smoke ? "punctual-bench-smoke-" : `punctual-bench-${only}-`))
    : resolve(repositoryRoot, "bench");
const logDir = mkdtempSync(join(tmpdir(), "punctual-bench-logs-"));

const redisUrl = testRedisUrl();
const prefix = `bench-${randomBytes(6).toString("hex")}`;
/**
 * The C allocator's settings the image sets (Dockerfile): two malloc arenas, and memory blocks of
 * 128 KB and more always mapped on their own, so that freeing them gives them back.
 */
const IMAGE_ALLOCATOR_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072" };
/** Limits raised through their documented variables; everything else is the services' default. */
const serviceEnv = {
  ...IMAGE_ALLOCATOR_ENV,
  REDIS_URL: redisUrl,
  QUEUE_PREFIX: prefix,
  ALLOW_PRIVATE_DESTINATIONS: "true",
  RATE_LIMIT_PER_MINUTE: "1000000000",
  MAX_EVENTS_PER_MONTH: "1000000000",
};
const config = loadConfig({ ...process.env, ...serviceEnv });
const lead = config.CLAIM_LEAD_MS;
const BASELINE_CONCURRENCY = 50;
/** The services run as in production: the bundles of `pnpm build`, with the image's node flags. */
const SERVICE_NODE_ARGS = ["--liftoff-only"];

interface Context {
  receiver: Receiver;
  database: TestDatabase;
  db: pg.Client;
  org: BenchOrganization;
  /** One server (the tests' Redis, `TEST_REDIS_URL`). */
  redis: Redis;
  eventQueue: ReturnType<typeof createEventQueue>;
}

/** Time to create a burst of n before its due time (creation is not measured). */
const prepareMs = (n: number) => 1_500 + n * 0.4;
const collectTimeout = (n: number, lastDue: number) => lastDue - Date.now() + 30_000 + n * 5;
const chunks = <T>(items: T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
const peak = (rss: ReturnType<typeof sampleRss>, p: NodeProcess) => rss.stop().get(p.name) ?? 0;
const hrtimeUs = () => Number(process.hrtime.bigint() / 1000n);
const log = (message: string) =>
  process.stdout.write(`[bench +${(performance.now() / 1000).toFixed(0)}s] ${message}\n`);

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not ready within ${timeoutMs} ms`);
    await sleep(100);
  }
}

/**
 * Runs a delivery measurement `plan.repeat` times (this machine is noisy) and keeps the run with the
 * median p99, with every run's p99 beside it; lost and duplicated deliveries count over all runs.
 */
async function repeated(measure: () => Promise<Delivery>): Promise<Delivery> {
  const runs: Delivery[] = [];
  for (let i = 0; i < plan.repeat; i++) runs.push(await measure());
  const median = [...runs].sort((a, b) => a.p99 - b.p99)[Math.floor((runs.length - 1) / 2)] as Delivery;
  return {
    ...median,
    p99Runs: runs.map((r) => r.p99),
    lost: runs.reduce((sum, r) => sum + r.lost, 0),
    duplicated: runs.reduce((sum, r) => sum + r.duplicated, 0),
  };
}

const count = (n: number) => n.toLocaleString("en-US");

// ---------------------------------------------------------------------------------------------
// 1. Raw BullMQ baseline

async function runBaseline(ctx: Context, sizes: number[], memory: MemoryPeak[]): Promise<Map<number, Delivery>> {
  const queueName = "baseline";
  const worker = startNode("baseline-worker", "bench/baseline-worker.ts", {
    env: {
      // The same allocator as the services', so that their memory compares.
      ...IMAGE_ALLOCATOR_ENV,
      REDIS_URL: redisUrl,
      QUEUE_PREFIX: prefix,
      QUEUE: queueName,
      TARGET_URL: ctx.receiver.url,
      CONCURRENCY: String(BASELINE_CONCURRENCY),
    },
    logDir,
  });
  const queue = new Queue(queueName, { connection: ctx.redis, prefix });
  const results = new Map<number, Delivery>();
  try {
    await waitFor("baseline worker", async () => (await queue.getWorkersCount()) > 0);
    const burst = async (n: number): Promise<Delivery> => {
      await ctx.receiver.reset();
      const due = Date.now() + prepareMs(n);
      const scheduledTime = new Date(due).toISOString();
      const ids = Array.from({ length: n }, (_, i) => `b${i}-${randomBytes(4).toString("hex")}`);
      const cpuBefore = cpuMs(worker.pid);
      for (const chunk of chunks(ids, 1_000)) {
        await queue.addBulk(
          chunk.map((id) => ({
            name: "deliver",
            data: { id, scheduledTime },
            opts: { jobId: id, delay: due - Date.now(), removeOnComplete: { count: 1_000 }, removeOnFail: true },
          })),
        );
      }
      const headroomMs = due - Date.now();
      const stats = await ctx.receiver.collect(new Map(ids.map((id) => [id, due])), collectTimeout(n, due));
      return { ...stats, headroomMs, cpuMsPerDelivery: (cpuMs(worker.pid) - cpuBefore) / n };
    };
    for (let i = 0; i < plan.warmup.bursts; i++) await burst(plan.warmup.size);
    for (const n of sizes) {
      log(`baseline: ${count(n)} jobs due at one instant, ${plan.repeat}×`);
      const rss = sampleRss([worker]);
      results.set(n, await repeated(() => burst(n)));
      const bytes = peak(rss, worker);
      if (n === sizes.at(-1)) memory.push({ process: worker.name, during: `bursts of ${count(n)}`, bytes });
    }
  } finally {
    await worker.stop();
    await queue.close();
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// 2–4, 6. Punctual deliveries: events created in Postgres and queued as the API does, delivered by
// worker processes started as in production.

/** The health (and metrics) port of each worker process. */
const healthPorts = new Map<NodeProcess, number>();

async function startWorker(
  ctx: Context,
  name: string,
  nodeArgs: string[] = [],
  settings: Record<string, string> = {},
): Promise<NodeProcess> {
  const port = await freePort();
  const worker = startNode(name, "dist/worker.js", {
    env: { ...serviceEnv, ...settings, DATABASE_URL: ctx.database.url, WORKER_HEALTH_PORT: String(port) },
    nodeArgs: [...SERVICE_NODE_ARGS, ...nodeArgs],
    logDir,
  });
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  healthPorts.set(worker, port);
  return worker;
}

/** The cumulative buckets (upper bound in s → count) of the workers' attempt record lag histogram. */
async function recordLagBuckets(workers: NodeProcess[]): Promise<Map<number, number>> {
  const buckets = new Map<number, number>();
  for (const worker of workers) {
    const port = healthPorts.get(worker);
    if (port === undefined) continue;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    for (const match of text.matchAll(/^punctual_attempt_record_lag_seconds_bucket\{([^}]*)\} (\d+)$/gm)) {
      const labels = match[1] ?? "";
      if (!labels.includes('kind="event"')) continue;
      const le = /le="([^"]+)"/.exec(labels)?.[1];
      const bound = le === "+Inf" ? Number.POSITIVE_INFINITY : Number(le);
      buckets.set(bound, (buckets.get(bound) ?? 0) + Number(match[2]));
    }
  }
  return buckets;
}

/** The p99 (bucket upper bound, ms) of the record lags observed between two readings. */
function recordLagP99(before: Map<number, number>, after: Map<number, number>): number {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const delta = (bound: number) => (after.get(bound) ?? 0) - (before.get(bound) ?? 0);
  const total = delta(Number.POSITIVE_INFINITY);
  if (total === 0) return Number.NaN;
  const bound = bounds.find((b) => delta(b) >= 0.99 * total) ?? Number.POSITIVE_INFINITY;
  return bound * 1000;
}

/** Creates events due at `dues` (ms), queues them, and measures their delivery by `workers`. */
async function deliverEvents(
  ctx: Context,
  dues: number[],
  workers: NodeProcess[],
  leadMs: number = lead,
  options: { deliveryPolicy?: object; flowKeys?: string[] } = {},
): Promise<Delivery> {
  await ctx.receiver.reset();
  const events = dues.map((due) => ({ id: newId("evt"), scheduledTime: new Date(due) }));
  const cpuOf = () => workers.reduce((sum, w) => sum + cpuMs(w.pid), 0);
  const cpuBefore = cpuOf();
  const lagBefore = await recordLagBuckets(workers);
  await insertEvents(ctx.db, ctx.org.orgId, ctx.receiver.url, events, options.deliveryPolicy, options.flowKeys);
  for (const chunk of chunks(events, 1_000)) await ctx.eventQueue.scheduleMany(chunk);
  const firstDue = Math.min(...dues);
  const lastDue = Math.max(...dues);
  const headroomMs = firstDue - leadMs - Date.now();
  const stats = await ctx.receiver.collect(
    new Map(events.map((e) => [e.id, e.scheduledTime.getTime()])),
    collectTimeout(events.length, lastDue),
  );
  const cpuMsPerDelivery = (cpuOf() - cpuBefore) / events.length;
  // The attempts are recorded after the answer: give the last batch a moment to commit.
  const ids = events.map((e) => e.id);
  let books = await bookkeeping(ctx.db, ids);
  for (let i = 0; i < 50 && books.sent < ids.length - stats.lost; i++) {
    await sleep(200);
    books = await bookkeeping(ctx.db, ids);
  }
  const recordLagP99Ms = recordLagP99(lagBefore, await recordLagBuckets(workers));
  return { ...stats, headroomMs, cpuMsPerDelivery, sent: books.sent, attempts: books.attempts, recordLagP99Ms };
}

/** The policy of the policy burst: per-event headers and the payload itself as the body. */
const BENCH_POLICY = {
  method: "POST",
  body: "raw",
  headers: { Authorization: "Bearer bench-token-0123456789", "X-Tenant": "acme", "X-Request-Source": "bench" },
};

/** The flows of the flow burst, and limits it never reaches (100 events each, all at once). */
const BENCH_FLOWS = Array.from({ length: 100 }, (_, n) => `bench-flow-${n}`);
const BENCH_FLOW_LIMITS = { rate: 10_000, parallelism: 1_000 };

const burstDues = (n: number, leadMs: number = lead) => Array<number>(n).fill(Date.now() + leadMs + prepareMs(n));

// ---------------------------------------------------------------------------------------------
// 7. A noisy neighbour: organization B's attempts hang on many origins and crawl on a slow one
// while organization A's burst is due; A's lateness is compared with the same burst alone.

/** A receiver of B's in this process: it never answers, or answers after `answerMs`. */
async function neighbourReceiver(answerMs: number | undefined): Promise<{ url: string; close(): void }> {
  const server = createServer((req, res) => {
    req.resume();
    if (answerMs !== undefined) setTimeout(() => res.end("ok"), answerMs);
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/b`,
    close() {
      server.closeAllConnections();
      server.close();
    },
  };
}

async function noisyNeighbour(
  ctx: Context,
  worker: NodeProcess,
  spec: NonNullable<typeof plan.noisy>,
): Promise<NonNullable<Results["noisy"]>> {
  const hanging = await Promise.all(Array.from({ length: spec.hangingOrigins }, () => neighbourReceiver(undefined)));
  const slow = await neighbourReceiver(spec.slowAnswerMs);
  try {
    const orgB = await insertOrganization(ctx.db, "bench-neighbour");
    log(`noisy neighbour: ${count(spec.burst)} of A due at one instant alone, ${plan.repeat}×`);
    const alone = await repeated(() => deliverEvents(ctx, burstDues(spec.burst), [worker]));
    log(
      `noisy neighbour: the same beside B's ${count(spec.hanging)} hanging attempts on ${spec.hangingOrigins} origins and ${count(spec.slow)} to a receiver answering after ${spec.slowAnswerMs / 1000} s, ${plan.repeat}×`,
    );
    const withNeighbour = await repeated(async () => {
      const dues = burstDues(spec.burst);
      // B's attempts are due just before A's, so they are in flight (and waiting) when A's come.
      const dueB = new Date((dues[0] ?? Date.now()) - 1_500);
      const groups = [
        ...hanging.map((receiver) => ({ url: receiver.url, n: Math.ceil(spec.hanging / spec.hangingOrigins) })),
        { url: slow.url, n: spec.slow },
      ];
      for (const group of groups) {
        const events = Array.from({ length: group.n }, () => ({ id: newId("evt"), scheduledTime: dueB }));
        await insertEvents(ctx.db, orgB.orgId, group.url, events);
        for (const chunk of chunks(events, 1_000)) await ctx.eventQueue.scheduleMany(chunk);
      }
      return deliverEvents(ctx, dues, [worker]);
    });
    return { ...spec, alone, withNeighbour };
  } finally {
    for (const receiver of [...hanging, slow]) receiver.close();
  }
}

// ---------------------------------------------------------------------------------------------
// 5. API under load (autocannon)

function cannon(options: autocannon.Options, times: number[]): Promise<autocannon.Result> {
  return new Promise((done, fail) => {
    const instance = autocannon(options, (error, result) => (error ? fail(error) : done(result)));
    instance.on("response", (_client, _status, _bytes, responseTime) => times.push(responseTime));
  });
}

function httpLoad(result: autocannon.Result, times: number[]): HttpLoad {
  const sorted = times.sort((a, b) => a - b);
  return {
    requests: result.requests.total,
    ok: result["2xx"],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    perSecond: result["2xx"] / result.duration,
    p50: quantile(sorted, 0.5),
    p99: quantile(sorted, 0.99),
    max: sorted.at(-1) ?? Number.NaN,
  };
}

async function startApi(name: string, databaseUrl: string): Promise<{ api: NodeProcess; base: string }> {
  const port = await freePort();
  const api = startNode(name, "dist/api.js", {
    env: { ...serviceEnv, DATABASE_URL: databaseUrl, PORT: String(port), HOST: "127.0.0.1" },
    nodeArgs: SERVICE_NODE_ARGS,
    logDir,
  });
  const base = `http://127.0.0.1:${port}`;
  await waitForHttp(`${base}/healthz`);
  return { api, base };
}

async function postEvents(ctx: Context, base: string): Promise<HttpLoad> {
  const request = {
    url: `${base}/api/events`,
    method: "POST" as const,
    connections: plan.post.connections,
    headers: { "x-api-key": ctx.org.apiKey, "content-type": "application/json" },
    body: JSON.stringify({
      payload: '{"hello":"world"}',
      destination: ctx.receiver.url,
      // Inside ENQUEUE_HORIZON_MS (1 h): each create queues its delayed job, as the API did for every
      // event before the horizon; a create beyond it costs only its Postgres statement.
      scheduledTime: new Date(Date.now() + 1_800_000).toISOString(),
    }),
  };
  if (plan.post.warmupSeconds > 0) await cannon({ ...request, duration: plan.post.warmupSeconds }, []);
  const times: number[] = [];
  return httpLoad(await cannon({ ...request, duration: plan.post.seconds }, times), times);
}

/** Batches of `plan.batch.size` events inside the enqueue horizon, one at a time: each answer's time. */
async function postBatches(ctx: Context, base: string): Promise<{ size: number; timesMs: number[] }> {
  const timesMs: number[] = [];
  for (let n = 0; n < plan.batch.requests; n++) {
    const scheduledTime = new Date(Date.now() + 1_800_000).toISOString();
    const events = Array.from({ length: plan.batch.size }, (_, i) => ({
      payload: JSON.stringify({ batch: n, i }),
      destination: ctx.receiver.url,
      scheduledTime,
      labels: { batch: String(n) },
    }));
    const started = performance.now();
    const response = await fetch(`${base}/api/events/batch`, {
      method: "POST",
      headers: { "x-api-key": ctx.org.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ events }),
    });
    await response.arrayBuffer();
    timesMs.push(performance.now() - started);
    if (!response.ok) throw new Error(`POST /api/events/batch answered ${response.status}`);
  }
  return { size: plan.batch.size, timesMs };
}

async function listEvents(base: string, apiKey: string, rows: number): Promise<HttpLoad & { rowsPerPage: number }> {
  const page = Math.min(rows, 1_000);
  const randomPath = () => {
    const start = new Date(SEED_START + Math.floor(Math.random() * (rows - page + 1)) * SEED_STEP_MS);
    return `/api/events?scheduledStartDate=${encodeURIComponent(start.toISOString())}`;
  };
  const headers = { "x-api-key": apiKey };
  const check = await fetch(`${base}${randomPath()}`, { headers });
  const rowsPerPage = check.ok ? ((await check.json()) as unknown[]).length : 0;
  if (rowsPerPage !== page) throw new Error(`GET /api/events returned ${rowsPerPage} rows (${check.status})`);
  const times: number[] = [];
  const result = await cannon(
    {
      url: base,
      connections: 1,
      amount: plan.list.requests,
      headers,
      requests: [{ method: "GET", setupRequest: (req) => ({ ...req, path: randomPath() }) }],
    },
    times,
  );
  return { ...httpLoad(result, times), rowsPerPage };
}

/** The windows GET /api/stats is measured over, in hour buckets. */
const STATS_WINDOWS = [
  { label: "24 h", ms: 24 * 3_600_000 },
  { label: "7 d", ms: 7 * 24 * 3_600_000 },
];
/**
 * Where the windows end: half an hour before the seed's end, as a window ending "now" in the
 * middle of an hour. Its first and last hours are partial, so every request computes them from the
 * history, as every console request computes the hour in progress.
 */
const STATS_WINDOW_END = STATS_SEED_END - 1_800_000;

/** The first request of a window (on an API that has kept no hour yet), then `plan.stats.requests` more. */
async function statsRequests(base: string, apiKey: string, windowMs: number): Promise<HttpLoad & { firstMs: number }> {
  const from = new Date(STATS_WINDOW_END - windowMs).toISOString();
  const to = new Date(STATS_WINDOW_END).toISOString();
  const path = `/api/stats?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}&bucket=hour`;
  const headers = { "x-api-key": apiKey };
  const started = performance.now();
  const check = await fetch(`${base}${path}`, { headers });
  const body = check.ok ? ((await check.json()) as { buckets: unknown[]; totals: { sent: number } }) : undefined;
  const firstMs = performance.now() - started;
  if (!body || body.buckets.length !== windowMs / 3_600_000 + 1 || body.totals.sent === 0) {
    throw new Error(`GET /api/stats answered ${check.status} without the window's buckets and deliveries`);
  }
  const times: number[] = [];
  const result = await cannon({ url: `${base}${path}`, connections: 1, amount: plan.stats.requests, headers }, times);
  return { ...httpLoad(result, times), firstMs };
}

/**
 * GET /api/stats over one organization's seeded history, beside a noisy neighbour's failed
 * attempts, each window one request at a time.
 */
async function runStats(runDatabaseUrl: string, cleanups: (() => Promise<unknown>)[]): Promise<void> {
  log(
    `api: GET /api/stats over ${count(plan.stats.rows)} events with their attempts, beside another organization's ${count(plan.stats.neighbourFailures)} failed attempts`,
  );
  const seed = await prepareStatsSeed(plan.stats.rows, plan.stats.neighbourFailures, plan.stats.shared, runDatabaseUrl);
  cleanups.push(() => seed.release());
  const windows: NonNullable<Results["stats"]>["windows"] = [];
  for (const window of STATS_WINDOWS) {
    // An API of its own per window: its first request finds no hour kept.
    const { api, base } = await startApi("api-stats", seed.url);
    log(`api: GET /api/stats, ${window.label} in hour buckets, 1 + ${plan.stats.requests} requests`);
    windows.push({ label: window.label, ...(await statsRequests(base, seed.apiKey, window.ms)) });
    await api.stop();
  }
  results.stats = {
    storedRows: plan.stats.rows,
    neighbourFailures: seed.neighbourFailures,
    seeded: seed.seeded,
    windows,
  };
}

/** Postgres at volume (bench/lib/volume.ts): its own data set, the API started over it. */
async function runVolume(ctx: Context, cleanups: (() => Promise<unknown>)[]): Promise<void> {
  results.volume = await measureVolume(
    plan.volume,
    ctx.database.url,
    { startApi, log, destination: ctx.receiver.url },
    cleanups,
  );
  await stopAll();
}

// ---------------------------------------------------------------------------------------------

async function runNoisy(ctx: Context): Promise<void> {
  if (!plan.noisy) return;
  // A worker of its own: B's attempts go on hanging and retrying after the measurement.
  const worker = await startWorker(ctx, "worker-noisy");
  for (let i = 0; i < plan.warmup.bursts; i++) await deliverEvents(ctx, burstDues(plan.warmup.size), [worker]);
  results.noisy = await noisyNeighbour(ctx, worker, plan.noisy);
  await worker.stop(1_000);
}

/** Live heap per prepared and per claimed event, in a worker process of its own (bench/prepared-memory.ts). */
async function measurePreparedMemory(ctx: Context): Promise<void> {
  log(`prepared events: live heap of a worker holding ${count(plan.preparedEvents)}`);
  const preparedPrefix = `${prefix}-prepared`;
  cleanups.push(() => deleteKeys(ctx.redis, `${preparedPrefix}:*`));
  const measuring = startNode("prepared-memory", "bench/prepared-memory.ts", {
    env: {
      ...serviceEnv,
      // Queues of its own: the benchmark's other workers must not take its events.
      QUEUE_PREFIX: preparedPrefix,
      DATABASE_URL: ctx.database.url,
      ORG_ID: ctx.org.orgId,
      TARGET_URL: ctx.receiver.url,
      EVENTS: String(plan.preparedEvents),
    },
    nodeArgs: ["--expose-gc"],
    logDir,
    runsToEnd: true,
  });
  const code = await new Promise<number | null>((done) => measuring.child.once("exit", done));
  // Its output is the worker's log lines, then one line of JSON with the figures.
  const figures = readFileSync(measuring.logFile, "utf8")
    .split("\n")
    .findLast((line) => line.startsWith('{"n":'));
  if (code !== 0 || !figures)
    throw new Error(`bench/prepared-memory.ts failed (exit ${code}): see ${measuring.logFile}`);
  results.preparedMemory = JSON.parse(figures);
}

/** A cron job firing every second for `plan.cronSeconds` on a worker of its own (bench/lib/cron.ts). */
async function runCron(ctx: Context): Promise<void> {
  const kept = (config as Record<string, unknown>).CRON_RUNS_KEPT_PER_JOB;
  results.cron = await measureCronEverySecond(
    {
      db: ctx.db,
      databaseUrl: ctx.database.url,
      redis: ctx.redis,
      prefix,
      orgId: ctx.org.orgId,
      receiver: ctx.receiver,
      startWorker: () => startWorker(ctx, "worker-cron"),
      cpuMs,
      runsKeptPerJob: typeof kept === "number" ? kept : undefined,
      log,
    },
    plan.cronSeconds,
  );
}

/** A worker started and left idle for `plan.idleSettleMs`: its RSS then, once V8 has settled. */
async function measureSettledIdle(ctx: Context): Promise<void> {
  log(`punctual: a worker idle for ${plan.idleSettleMs / 1000} s after its start`);
  const idle = await startWorker(ctx, "worker-idle");
  try {
    await sleep(plan.idleSettleMs);
    results.memory.push({
      process: idle.name,
      during: `idle, ${plan.idleSettleMs / 1000} s after its start`,
      bytes: rssBytes(idle.pid),
    });
  } finally {
    await idle.stop();
  }
}

/** One worker under `node --cpu-prof`: warm-up bursts, then the profiled burst of n. */
async function runProfile(ctx: Context, n: number): Promise<void> {
  log(`profile: ${count(n)} events due at one instant under node --cpu-prof`);
  const profileDir = join(logDir, "profile");
  const extra = process.env.PROFILE_NODE_ARGS?.split(" ").filter(Boolean) ?? [];
  const profiled = await startWorker(ctx, "worker-profiled", ["--cpu-prof", "--cpu-prof-dir", profileDir, ...extra]);
  const warmBursts = process.argv.includes("--first") ? 0 : plan.warmup.bursts;
  for (let i = 0; i < warmBursts; i++) await deliverEvents(ctx, burstDues(plan.warmup.size), [profiled]);
  const dues = burstDues(n);
  const fromUs = hrtimeUs();
  const dueUs = fromUs + ((dues[0] ?? 0) - Date.now()) * 1000;
  const rss = sampleRss([profiled]);
  const delivery = await deliverEvents(ctx, dues, [profiled]);
  const peakRss = peak(rss, profiled);
  // The window after the instant ends with the last arrival: what follows it (completions, the
  // harness's own reads of the metrics) makes no delivery late.
  const toUs = dueUs + delivery.max * 1000;
  await profiled.stop();
  const [file] = readdirSync(profileDir).filter((f) => f.endsWith(".cpuprofile"));
  if (!file) throw new Error(`no CPU profile was written to ${profileDir}`);
  // Kept beside the report for Chrome DevTools (*.cpuprofile is not committed).
  copyFileSync(join(profileDir, file), join(outDir, "worker-burst.cpuprofile"));
  const profile = join(profileDir, file);
  writeFileSync(join(outDir, "worker-burst.window.json"), JSON.stringify({ fromUs, dueUs, toUs }));
  copyFileSync(profiled.logFile, join(outDir, "worker-profiled.log"));
  results.profile = {
    n,
    delivery,
    beforeDue: summarizeProfile(profile, fromUs, dueUs),
    afterDue: summarizeProfile(profile, dueUs, toUs),
  };
  if (only === "profile")
    results.memory.push({ process: profiled.name, during: `a burst of ${count(n)}`, bytes: peakRss });
}

async function main(results: Results, cleanups: (() => Promise<unknown>)[]): Promise<void> {
  const started = performance.now();
  log(`${smoke ? "smoke" : "full"} run${only ? ` of ${only} only` : ""}; logs in ${logDir}`);
  if (only === "transports") {
    const receiver = await startReceiver(logDir);
    results.transports = await compareTransports(receiver.url, plan.transports, logDir, log);
    results.durationMs = performance.now() - started;
    return;
  }
  // Its own database and Redis server: nothing else may count in their sizes.
  if (only === "horizon") {
    results.horizon = await measureHorizon(plan.horizon, log);
    results.durationMs = performance.now() - started;
    return;
  }
  log("pnpm build: the services' bundles in dist/");
  execFileSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], { cwd: repositoryRoot, stdio: "inherit" });
  const database = await createTestDatabase();
  cleanups.push(() => database.drop());
  const db = new pg.Client({ connectionString: database.url });
  await db.connect();
  cleanups.push(() => db.end());
  const redis = createRedis(redisUrl);
  cleanups.push(async () => {
    await deleteKeys(redis, `${prefix}:*`);
    await redis.quit();
  });
  const queue = new Queue<EventJobData>(QUEUE_NAMES.events, { connection: redis, prefix });
  cleanups.push(() => queue.close());
  const receiver = await startReceiver(logDir);
  const org = await insertOrganization(db, "bench");
  const eventQueue = createEventQueue(queue, config, systemClock);
  const ctx: Context = { receiver, database, db, org, redis, eventQueue };
  results.services = {
    postgres: (await db.query<{ server_version: string }>("SHOW server_version")).rows[0]?.server_version ?? "?",
    redis: /redis_version:(\S+)/.exec(await redis.info("server"))?.[1] ?? "?",
  };

  if (only === "volume") {
    await runVolume(ctx, cleanups);
    results.durationMs = performance.now() - started;
    return;
  }
  // The API alone over its seed: no receiver, worker or queue is involved.
  if (only === "stats") {
    await runStats(database.url, cleanups);
    results.durationMs = performance.now() - started;
    return;
  }

  log("receiver alone: autocannon, 50 connections");
  const ceiling = await cannon(
    { url: receiver.url, method: "POST", connections: 50, duration: plan.receiverSeconds },
    [],
  );
  results.receiverPerSecond = ceiling["2xx"] / ceiling.duration;

  // While nothing else runs: the services are not started yet, Postgres and Redis are idle.
  if (only === "prepared") {
    await measurePreparedMemory(ctx);
    results.durationMs = performance.now() - started;
    return;
  }
  if (only === "profile") {
    await runProfile(ctx, profileSize ?? plan.bursts[0] ?? 1_000);
    results.durationMs = performance.now() - started;
    return;
  }
  if (only === "campaign") {
    // As the bursts run: one worker, warmed by the warm-up bursts, beside the API.
    const { base } = await startApi("api", database.url);
    const worker = await startWorker(ctx, "worker-1");
    for (let i = 0; i < plan.warmup.bursts; i++) await deliverEvents(ctx, burstDues(plan.warmup.size), [worker]);
    const rss = sampleRss([worker]);
    results.campaign = await measureCampaign({ base, apiKey: org.apiKey, receiver, log }, plan.campaign);
    results.memory.push({ process: worker.name, during: "the campaign", bytes: peak(rss, worker) });
    results.durationMs = performance.now() - started;
    return;
  }
  if (only === "noisy") {
    await runNoisy(ctx);
    results.durationMs = performance.now() - started;
    return;
  }
  if (only === "cron") {
    await runCron(ctx);
    results.durationMs = performance.now() - started;
    return;
  }
  if (only !== "bursts") results.transports = await compareTransports(receiver.url, plan.transports, logDir, log);

  const sizes = [...new Set([...plan.bursts, ...(only === "bursts" ? [] : [plan.throughput])])].sort((a, b) => a - b);
  results.baseline = await runBaseline(ctx, sizes, results.memory);

  // The API runs from here on (its RSS is sampled during the bursts too); one worker first.
  const { api, base } = await startApi("api", database.url);
  // The first burst after a start, each run with a worker of its own (started, one burst, stopped).
  if (plan.warmup.size > 0) {
    log(`punctual: the first ${count(plan.warmup.size)} after a worker's start, ${plan.repeat}×`);
    results.firstBurst = await repeated(async () => {
      const fresh = await startWorker(ctx, "worker-fresh");
      try {
        return await deliverEvents(ctx, burstDues(plan.warmup.size), [fresh]);
      } finally {
        await fresh.stop();
      }
    });
  }
  await measureSettledIdle(ctx);
  const workerA = await startWorker(ctx, "worker-1");
  for (const p of [workerA, api])
    results.memory.push({ process: p.name, during: "idle after start", bytes: rssBytes(p.pid) });
  for (let i = 0; i < plan.warmup.bursts; i++) await deliverEvents(ctx, burstDues(plan.warmup.size), [workerA]);
  for (const n of plan.bursts) {
    log(`punctual: ${count(n)} events due at one instant, one worker, ${plan.repeat}×`);
    const rss = sampleRss([workerA, api]);
    results.bursts.set(n, await repeated(() => deliverEvents(ctx, burstDues(n), [workerA])));
    for (const p of [workerA, api])
      results.memory.push({ process: p.name, during: `bursts of ${count(n)}`, burst: n, bytes: peak(rss, p) });
  }
  if (plan.policyBurst > 0) {
    // What a delivery policy costs on the hot path: the same burst, each event with its own
    // headers (a sensitive one among them) and a raw JSON body, right after the plain ones.
    log(`punctual: ${count(plan.policyBurst)} events with a delivery policy due at one instant, ${plan.repeat}×`);
    results.policyBurst = await repeated(() =>
      deliverEvents(ctx, burstDues(plan.policyBurst), [workerA], lead, { deliveryPolicy: BENCH_POLICY }),
    );
  }
  if (plan.flowBurst > 0) {
    // What flows cost when nothing is held back: the same burst spread over 100 flows whose limits
    // it never reaches; every attempt is admitted in Redis (one call per flow and pass).
    log(
      `punctual: ${count(plan.flowBurst)} events over ${BENCH_FLOWS.length} flows due at one instant, ${plan.repeat}×`,
    );
    await insertFlows(ctx.db, ctx.org.orgId, BENCH_FLOWS, BENCH_FLOW_LIMITS);
    results.flowBurst = await repeated(() =>
      deliverEvents(ctx, burstDues(plan.flowBurst), [workerA], lead, { flowKeys: BENCH_FLOWS }),
    );
  }
  if (plan.largeBurst > 0) {
    log(`punctual: ${count(plan.largeBurst)} events due at one instant, one worker, once`);
    const rss = sampleRss([workerA, api]);
    results.largeBurst = await deliverEvents(ctx, burstDues(plan.largeBurst), [workerA]);
    for (const p of [workerA, api]) {
      results.memory.push({
        process: p.name,
        during: `a burst of ${count(plan.largeBurst)}`,
        burst: plan.largeBurst,
        bytes: peak(rss, p),
      });
    }
  }
  if (only === "bursts") {
    await stopAll();
    results.durationMs = performance.now() - started;
    return;
  }
  results.campaign = await measureCampaign(
    { base, apiKey: ctx.org.apiKey, receiver: ctx.receiver, log },
    plan.campaign,
  );
  await measurePreparedMemory(ctx);
  log(`punctual: ${plan.single.count} single events ${plan.single.gapMs} ms apart`);
  const firstDue = Date.now() + lead + prepareMs(plan.single.count);
  results.single = await deliverEvents(
    ctx,
    Array.from({ length: plan.single.count }, (_, i) => firstDue + i * plan.single.gapMs),
    [workerA],
  );
  const throughput = async (workers: NodeProcess[]) => {
    log(`punctual: throughput, ${count(plan.throughput)} events, ${workers.length} worker(s), ${plan.repeat}×`);
    results.throughput.set(
      workers.length,
      await repeated(() => deliverEvents(ctx, burstDues(plan.throughput), workers)),
    );
  };
  await throughput([workerA]);
  const workerB = await startWorker(ctx, "worker-2");
  await throughput([workerA, workerB]);
  await Promise.all([workerA.stop(), workerB.stop()]);
  // On a worker of its own, with nothing else running.
  await runCron(ctx);

  // Before the noisy neighbour: its organization B leaves retries and hanging deliveries behind.
  if (plan.profile) await runProfile(ctx, plan.bursts[0] ?? 1_000);

  await runNoisy(ctx);

  log(`api: POST /api/events, ${plan.post.connections} connections, ${plan.post.seconds} s`);
  let rss = sampleRss([api]);
  results.post = await postEvents(ctx, base);
  results.memory.push({ process: api.name, during: "POST load", bytes: peak(rss, api) });

  log(`api: POST /api/events/batch of ${count(plan.batch.size)} events, ${plan.batch.requests} times`);
  results.batch = await postBatches(ctx, base);

  log(`api: GET /api/events, 1,000 rows of ${count(plan.list.rows)} stored`);
  const seed = await prepareListSeed(plan.list.rows, plan.list.shared, database.url);
  cleanups.push(() => seed.release());
  let listApi = { api, base };
  if (seed.url !== database.url) {
    await api.stop();
    listApi = await startApi("api-list", seed.url);
  }
  rss = sampleRss([listApi.api]);
  const list = await listEvents(listApi.base, seed.apiKey, plan.list.rows);
  results.list = { ...list, storedRows: plan.list.rows, seeded: seed.seeded };
  results.memory.push({ process: listApi.api.name, during: "GET load", bytes: peak(rss, listApi.api) });
  await listApi.api.stop();
  await runStats(database.url, cleanups);
  await stopAll();
  results.horizon = await measureHorizon(plan.horizon, log);
  await runVolume(ctx, cleanups);
  results.durationMs = performance.now() - started;
}

const results: Results = {
  smoke,
  only,
  plan,
  config: {
    WORKER_CONCURRENCY: config.WORKER_CONCURRENCY,
    WORKER_PREPARED_JOBS: config.WORKER_PREPARED_JOBS,
    PREPARE_AHEAD_MS: config.PREPARE_AHEAD_MS,
    CLAIM_LEAD_MS: config.CLAIM_LEAD_MS,
    DATABASE_POOL_SIZE: config.DATABASE_POOL_SIZE,
    LOG_LEVEL: config.LOG_LEVEL,
  },
  baselineConcurrency: BASELINE_CONCURRENCY,
  baseline: new Map(),
  bursts: new Map(),
  memory: [],
  throughput: new Map(),
  durationMs: 0,
};
const cleanups: (() => Promise<unknown>)[] = [];
let failure: unknown;
const stopSignal = new Promise<never>((_, fail) => {
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => fail(new Error(`${signal}`)));
  setTimeout(() => fail(new Error(`time limit of ${plan.timeLimitMs / 1000} s reached`)), plan.timeLimitMs).unref();
});
try {
  await Promise.race([main(results, cleanups), stopSignal]);
} catch (error) {
  failure = error;
}
await stopAll();
for (const cleanup of cleanups.reverse()) await cleanup().catch((error: unknown) => log(`cleanup: ${error}`));

const deliveries = [
  ...results.bursts.values(),
  ...results.throughput.values(),
  results.single,
  results.firstBurst,
  results.cron?.delivery,
  results.campaign?.ahead,
  results.campaign?.campaign,
].filter((d): d is NonNullable<typeof d> => d !== undefined);
const broken = deliveries.filter((d) => d.lost > 0 || d.duplicated > 0);
if (failure === undefined) {
  const report = writeReport(results, outDir);
  log(`report written to ${report}`);
  if (only === "transports") process.stdout.write(`${transportSection(results).join("\n")}\n`);
  if (only === "horizon") process.stdout.write(`${horizonSection(results).join("\n")}\n`);
  if (only === "volume") process.stdout.write(`${volumeSection(results).join("\n")}\n`);
  if (only === "profile") process.stdout.write(`${profileSection(results).join("\n")}\n`);
  if (only === "prepared") process.stdout.write(`${preparedMemorySection(results).join("\n")}\n`);
  if (only === "cron") process.stdout.write(`${cronSection(results).join("\n")}\n`);
  if (only === "campaign") process.stdout.write(`${campaignSection(results).join("\n")}\n`);
  rmSync(logDir, { recursive: true, force: true });
} else {
  log(`failed: ${failure instanceof Error ? (failure.stack ?? failure.message) : String(failure)}`);
  log(`process logs kept in ${logDir}`);
}
if (broken.length > 0) log(`${broken.length} measurement(s) lost or duplicated deliveries`);
process.exit(failure !== undefined || broken.length > 0 ? 1 : 0);
