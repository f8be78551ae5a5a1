import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import type { CampaignResult, CampaignRun } from "./campaign.ts";
import type { CronResult } from "./cron.ts";
import type { HorizonResult } from "./horizon.ts";
import { repositoryRoot } from "./processes.ts";
import type { ProfileSummary } from "./profile.ts";
import type { DeliveryStats } from "./stats.ts";
import { IN_FLIGHT, type TransportResult } from "./transports.ts";
import type { VolumeHttp, VolumeResult } from "./volume.ts";

// Writes RESULTS.md (and lateness.svg beside it) from one run's figures. Every number in it was
// measured in that run; the goals are judged against them, not against older runs.

export interface Delivery extends DeliveryStats {
  /** How long before the (first) due time, or claim time for Punctual, the jobs were all queued. */
  headroomMs: number;
  /** CPU time of the worker process(es) per delivery, ms. */
  cpuMsPerDelivery: number;
  /** With repetitions: the p99 of every run (this one is the median). */
  p99Runs?: number[];
  /** Punctual only: events Sent and attempts recorded in Postgres. */
  sent?: number;
  attempts?: number;
  /** Punctual only: p99 from an answer to its attempt row committed (the worker's histogram bucket), ms. */
  recordLagP99Ms?: number;
}

export interface HttpLoad {
  requests: number;
  ok: number;
  non2xx: number;
  errors: number;
  /** 2xx answers per second. */
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
}

/** The peak RSS of one process during one measurement. */
export interface MemoryPeak {
  process: string;
  during: string;
  bytes: number;
  /** The burst size, when measured during a Punctual burst. */
  burst?: number;
}

export interface Results {
  smoke: boolean;
  /** The part run alone (`--only`), if any. */
  only?: string | undefined;
  plan: {
    bursts: number[];
    throughput: number;
    single: { count: number; gapMs: number };
    warmup: { size: number; bursts: number };
    repeat: number;
    post: { connections: number; seconds: number };
    list: { rows: number; requests: number };
    stats: { rows: number; requests: number };
  };
  config: Record<string, string | number>;
  baselineConcurrency: number;
  services?: { postgres: string; redis: string };
  /** By N. */
  baseline: Map<number, Delivery>;
  /** Punctual bursts with one worker, by N. */
  bursts: Map<number, Delivery>;
  /** The first burst of a freshly started worker, repeated with a new worker each time (median run). */
  firstBurst?: Delivery;
  /** A burst whose events each carry a delivery policy (headers, raw body), after the plain bursts. */
  policyBurst?: Delivery;
  flowBurst?: Delivery;
  memory: MemoryPeak[];
  /** Live heap of a worker process idle, holding `n` prepared events, and holding them claimed and signed. */
  preparedMemory?: { n: number; idle: number; prepared: number; claimed: number; late: boolean };
  /** What the receiver answers alone (autocannon, 50 connections). */
  receiverPerSecond?: number;
  single?: Delivery;
  /** By number of worker processes. */
  throughput: Map<number, Delivery>;
  profile?: { n: number; delivery: Delivery; beforeDue: ProfileSummary; afterDue: ProfileSummary };
  post?: HttpLoad;
  /** POST /api/events/batch, one request at a time: each answer's time. */
  batch?: { size: number; timesMs: number[] };
  /** A campaign created by POST /api/events/batch shortly before its instant, beside the same burst created ahead. */
  campaign?: CampaignResult;
  list?: HttpLoad & { rowsPerPage: number; storedRows: number; seeded: boolean };
  /**
   * GET /api/stats over one organization's history of `storedRows` events, beside another
   * organization's `neighbourFailures` failed attempts, per window.
   */
  stats?: {
    storedRows: number;
    neighbourFailures: number;
    seeded: boolean;
    windows: (HttpLoad & { label: string; firstMs: number })[];
  };
  /** The HTTP clients side by side (bench/lib/transports.ts). */
  transports?: TransportResult[];
  /** One burst far larger than the prepared-jobs limit, run once. */
  largeBurst?: Delivery;
  /** Redis memory with the enqueue horizon off and on; Redis and Postgres bytes per event. */
  horizon?: HorizonResult;
  /** Organization A's burst alone and beside organization B's hanging and slow attempts. */
  noisy?: {
    hanging: number;
    hangingOrigins: number;
    slow: number;
    slowAnswerMs: number;
    burst: number;
    alone: Delivery;
    withNeighbour: Delivery;
  };
  /** Postgres at volume: the lifecycle's statements, the events API and retention over millions of rows. */
  volume?: VolumeResult;
  /** A cron job firing every second on one worker: lateness, run rows, Redis keys. */
  cron?: CronResult;
  durationMs: number;
}

const MB = 1_000_000;
const ms = (value: number) =>
  Number.isNaN(value) ? "–" : value < 10 ? value.toFixed(1) : Math.round(value).toLocaleString("en-US");
/** A difference in ms with its sign: +12, −34. */
const signedMs = (value: number) => `${value < 0 ? "−" : "+"}${ms(Math.abs(value))}`;
const num = (value: number) => (Number.isNaN(value) ? "–" : Math.round(value).toLocaleString("en-US"));
const ratio = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : "–");
const mb = (bytes: number) => `${(bytes / MB).toFixed(0)} MB`;
const mbExact = (bytes: number) => `${(bytes / MB).toFixed(bytes < 10 * MB ? 2 : 0)} MB`;
const verdict = (met: boolean) => (met ? "**met**" : "**not met**");
const row = (cells: (string | number)[]) => `| ${cells.join(" | ")} |`;

function git(args: string[]): string {
  try {
    return execFileSync("git", args, { cwd: repositoryRoot, encoding: "utf8" }).trim();
  } catch {
    return "";
  }
}

function machine(results: Results): [string, string][] {
  const commit = git(["rev-parse", "--short=12", "HEAD"]) || "unknown";
  const dirty = git(["status", "--porcelain", "--untracked-files=no"]) !== "";
  const minutes = Math.floor(results.durationMs / 60_000);
  const seconds = Math.round((results.durationMs % 60_000) / 1000);
  return [
    ["date", new Date().toISOString().replace(/\.\d+Z$/, "Z")],
    ["commit", `${commit}${dirty ? " with uncommitted changes" : ""}`],
    [
      "machine",
      `${cpus().length} × ${cpus()[0]?.model ?? "unknown CPU"}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB memory`,
    ],
    ["node", process.version],
    ["postgres / redis", `${results.services?.postgres ?? "?"} / ${results.services?.redis ?? "?"}`],
    [
      "run",
      `${results.smoke ? "smoke (`pnpm bench --smoke`)" : results.only ? `one part (\`pnpm bench --only ${results.only}\`)` : "full (`pnpm bench`)"}, ${minutes} min ${seconds} s`,
    ],
    [
      "settings",
      `${Object.entries(results.config)
        .map(([k, v]) => `${k}=${v}`)
        .join(", ")}; raw baseline at concurrency ${results.baselineConcurrency}`,
    ],
  ];
}

interface Goal {
  goal: string;
  target: string;
  measured: string;
  met: boolean | undefined;
}

function goals(r: Results): Goal[] {
  const list: Goal[] = [];
  const clean = (d: Delivery) => d.lost === 0 && d.duplicated === 0;
  const burst = (name: string, d: Delivery | undefined, limit: number) =>
    list.push({
      goal: name,
      target: `p99 ≤ ${num(limit)} ms, none lost or duplicated`,
      measured: d ? `p99 ${ms(d.p99)} ms, ${d.lost} lost, ${d.duplicated} duplicated` : "not measured",
      met: d ? d.p99 <= limit && clean(d) : undefined,
    });
  burst("burst, 1,000 due at one instant, one worker (median of the runs)", r.bursts.get(1_000), 100);
  burst("burst, 1,000 due at one instant, the first after the worker's start (median of the runs)", r.firstBurst, 100);
  burst("burst, 10,000 due at one instant, one worker", r.bursts.get(10_000), 1_000);
  const tenK = r.bursts.get(10_000);
  const tenKBase = r.baseline.get(10_000);
  if (tenK && tenKBase) {
    list.push({
      goal: "burst, 10,000: below the raw BullMQ baseline",
      target: "p99 < the baseline's p99 in the same run",
      measured: `${ms(tenK.p99)} ms against ${ms(tenKBase.p99)} ms (${ratio(tenK.p99 / tenKBase.p99)})`,
      met: tenK.p99 < tenKBase.p99,
    });
  }
  const plain = r.policyBurst ? r.bursts.get(r.policyBurst.n) : undefined;
  if (r.policyBurst && plain) {
    list.push({
      goal: `burst, ${num(r.policyBurst.n)} with per-event headers and a raw body`,
      target: "p99 within 10 % of the plain burst's in the same run, none lost or duplicated",
      measured: `${ms(r.policyBurst.p99)} ms against ${ms(plain.p99)} ms (${ratio(r.policyBurst.p99 / plain.p99)}), ${r.policyBurst.lost} lost, ${r.policyBurst.duplicated} duplicated`,
      met: r.policyBurst.p99 <= plain.p99 * 1.1 && clean(r.policyBurst),
    });
  }
  const plainOfFlows = r.flowBurst ? r.bursts.get(r.flowBurst.n) : undefined;
  if (r.flowBurst && plainOfFlows) {
    list.push({
      goal: `burst, ${num(r.flowBurst.n)} over 100 flows with limits it never reaches`,
      target: "p99 within 10 % of the plain burst's in the same run, none lost or duplicated",
      measured: `${ms(r.flowBurst.p99)} ms against ${ms(plainOfFlows.p99)} ms (${ratio(r.flowBurst.p99 / plainOfFlows.p99)}), ${r.flowBurst.lost} lost, ${r.flowBurst.duplicated} duplicated`,
      met: r.flowBurst.p99 <= plainOfFlows.p99 * 1.1 && clean(r.flowBurst),
    });
  }
  if (r.largeBurst) {
    list.push({
      goal: `burst, ${num(r.largeBurst.n)} due at one instant, one worker`,
      target: "every one delivered once, memory bounded, p99 reported",
      measured: `p99 ${ms(r.largeBurst.p99)} ms, ${r.largeBurst.lost} lost, ${r.largeBurst.duplicated} duplicated`,
      met: clean(r.largeBurst),
    });
  }
  const lags = [...r.bursts.values()].map((d) => d.recordLagP99Ms ?? Number.NaN);
  if (lags.length > 0) {
    const worst = Math.max(...lags);
    list.push({
      goal: "answer → attempt row committed, in the bursts",
      target: "p99 ≤ 50 ms",
      measured: `p99 ≤ ${ms(worst)} ms (worst burst size; histogram bucket bound)`,
      met: worst <= 50,
    });
  }
  const s = r.single;
  list.push({
    goal: "single-event precision at low load",
    target: "p99 ≤ 10 ms",
    measured: s ? `p50 ${ms(s.p50)} ms, p99 ${ms(s.p99)} ms (${s.n} events ${r.plan.single.gapMs} ms apart)` : "–",
    met: s ? s.p99 <= 10 && clean(s) : undefined,
  });
  const base = r.baseline.get(r.plan.throughput);
  for (const [workers, d] of r.throughput) {
    const share = base ? d.perSecond / base.perSecond : Number.NaN;
    list.push({
      goal: `throughput with Postgres bookkeeping, ${workers} worker${workers > 1 ? "s" : ""}`,
      target: "≥ 0.5 × the raw baseline's deliveries/s",
      measured: `${num(d.perSecond)}/s = ${ratio(share)} the baseline's ${num(base?.perSecond ?? Number.NaN)}/s (N=${num(d.n)})`,
      met: share >= 0.5 && clean(d),
    });
  }
  if (r.noisy) {
    const { alone, withNeighbour } = r.noisy;
    list.push({
      goal: `noisy neighbour: A's ${num(r.noisy.burst)} beside B's ${num(r.noisy.hanging)} hanging (${r.noisy.hangingOrigins} origins) and ${num(r.noisy.slow)} slow attempts`,
      target: "A's p99 within +50 ms of the same burst alone",
      measured: `${ms(withNeighbour.p99)} ms against ${ms(alone.p99)} ms alone (${signedMs(withNeighbour.p99 - alone.p99)} ms)`,
      met: withNeighbour.p99 - alone.p99 <= 50 && clean(withNeighbour) && clean(alone),
    });
  }
  if (r.post) {
    list.push({
      goal: `POST /api/events, autocannon, ${r.plan.post.connections} connections`,
      target: "≥ 1,000 req/s, p99 ≤ 50 ms",
      measured: `${num(r.post.perSecond)} req/s, p99 ${ms(r.post.p99)} ms, ${r.post.non2xx} non-2xx`,
      met: r.post.perSecond >= 1_000 && r.post.p99 <= 50 && r.post.non2xx === 0 && r.post.errors === 0,
    });
  }
  if (r.batch && r.batch.timesMs.length > 0) {
    const slowest = Math.max(...r.batch.timesMs);
    list.push({
      goal: `POST /api/events/batch of ${num(r.batch.size)} events`,
      target: "each answered within 1 s",
      measured: `slowest ${ms(slowest)} ms of ${r.batch.timesMs.length} (${r.batch.timesMs.map(ms).join(", ")} ms)`,
      met: slowest <= 1_000,
    });
  }
  const campaign = campaignGoal(r);
  if (campaign) list.push(campaign);
  if (r.list) {
    list.push({
      goal: `GET /api/events, ${num(r.list.rowsPerPage)} rows of ${num(r.list.storedRows)} stored`,
      target: "p99 ≤ 100 ms",
      measured: `p99 ${ms(r.list.p99)} ms over ${num(r.list.requests)} requests`,
      met: r.list.p99 <= 100 && r.list.non2xx === 0,
    });
  }
  for (const window of r.stats?.windows ?? []) {
    list.push({
      goal: `GET /api/stats, ${window.label} in hour buckets, over ${num(r.stats?.storedRows ?? 0)} events with attempts, beside another organization's ${num(r.stats?.neighbourFailures ?? 0)} failed attempts`,
      target: "p99 ≤ 100 ms",
      measured: `p99 ${ms(window.p99)} ms over ${num(window.requests)} requests (the first, before them: ${ms(window.firstMs)} ms)`,
      met: window.p99 <= 100 && window.non2xx === 0 && window.errors === 0,
    });
  }
  const h = r.horizon;
  if (h) {
    // The jobs are those of the events due within the horizon (they take their share of memory at the
    // off run's bytes per job, with 1 MB for Redis's own bookkeeping), not of the whole backlog.
    const share = h.on.jobs * h.off.bytesPerJob + MB;
    list.push({
      goal: `Redis memory with ${num(h.events)} Pending events over the next ${h.days} days, default horizon`,
      target: "proportional to the next hour's events only",
      measured: `${num(h.on.jobs)} jobs (${num(h.on.dueWithinHorizon)} events due within the hour), ${mbExact(h.on.usedMemoryBytes)} against ${mbExact(h.off.usedMemoryBytes)} with every event queued`,
      met: h.on.jobs === h.on.dueWithinHorizon && h.on.usedMemoryBytes <= share,
    });
  }
  list.push(...volumeGoals(r));
  const cron = cronGoal(r);
  if (cron) list.push(cron);
  const during10k = (name: string) => r.memory.find((m) => m.burst === 10_000 && m.process === name)?.bytes;
  const worker = during10k("worker-1");
  const api = during10k("api");
  if (worker !== undefined && api !== undefined) {
    list.push({
      goal: "memory during the 10,000 bursts",
      target: "API and worker peak RSS each ≤ 150 MB",
      measured: `worker ${mb(worker)}, API ${mb(api)}`,
      met: worker <= 150 * MB && api <= 150 * MB,
    });
  }
  // Idle once settled (a worker left idle after its start); right after the warm-up, V8 still
  // holds what it grew, which the Memory table shows too.
  const idle = r.memory.find((m) => m.process === "worker-idle");
  if (idle) {
    list.push({
      goal: "memory of an idle worker",
      target: "RSS ≤ 100 MB",
      measured: `${mb(idle.bytes)} (${idle.during})`,
      met: idle.bytes <= 100 * MB,
    });
  }
  return list;
}

function deliveryRows(r: Results): string[] {
  const lines = [
    row([
      "measurement",
      "N",
      "p50 ms",
      "p99 ms",
      "max ms",
      "p99 of each run",
      "deliveries/s",
      "lost",
      "dup.",
      "Sent / attempts in Postgres",
      "worker CPU ms per delivery",
      "answer → row committed, p99 ms",
      "p99 ÷ baseline p99",
      "deliveries/s ÷ baseline",
    ]),
    row(Array(14).fill("---")),
  ];
  const add = (name: string, d: Delivery, baseline: Delivery | undefined) => {
    lines.push(
      row([
        name,
        num(d.n),
        ms(d.p50),
        ms(d.p99),
        ms(d.max),
        d.p99Runs && d.p99Runs.length > 1 ? d.p99Runs.map(ms).join(" / ") : "–",
        num(d.perSecond),
        d.lost,
        d.duplicated,
        d.sent === undefined ? "–" : `${num(d.sent)} / ${num(d.attempts ?? 0)}`,
        d.cpuMsPerDelivery.toFixed(2),
        d.recordLagP99Ms === undefined ? "–" : `≤ ${ms(d.recordLagP99Ms)}`,
        baseline ? ratio(d.p99 / baseline.p99) : "–",
        baseline ? ratio(d.perSecond / baseline.perSecond) : "–",
      ]),
    );
  };
  for (const d of r.baseline.values()) add("raw BullMQ baseline, 1 worker process", d, undefined);
  if (r.firstBurst) {
    add("Punctual burst, 1 worker, the first after its start", r.firstBurst, r.baseline.get(r.firstBurst.n));
  }
  for (const [n, d] of r.bursts) add("Punctual burst, 1 worker", d, r.baseline.get(n));
  if (r.policyBurst) {
    add(
      "Punctual burst, 1 worker, each event with headers and a raw body",
      r.policyBurst,
      r.baseline.get(r.policyBurst.n),
    );
  }
  if (r.flowBurst) {
    add("Punctual burst, 1 worker, over 100 flows with limits", r.flowBurst, r.baseline.get(r.flowBurst.n));
  }
  if (r.largeBurst) add("Punctual burst, 1 worker, once", r.largeBurst, r.baseline.get(r.largeBurst.n));
  if (r.noisy) {
    add("noisy neighbour: A's burst alone (worker-noisy)", r.noisy.alone, undefined);
    add(
      `noisy neighbour: A's burst beside B's ${num(r.noisy.hanging)} hanging and ${num(r.noisy.slow)} slow attempts`,
      r.noisy.withNeighbour,
      undefined,
    );
  }
  if (r.single) add(`Punctual single events, ${r.plan.single.gapMs} ms apart`, r.single, undefined);
  for (const [workers, d] of r.throughput) {
    add(`Punctual throughput, ${workers} worker${workers > 1 ? "s" : ""}`, d, r.baseline.get(d.n));
  }
  if (r.profile) add("Punctual burst under --cpu-prof (not judged)", r.profile.delivery, r.baseline.get(r.profile.n));
  return lines;
}

/** The campaign's p99 may be this many times the same burst's created ahead. */
const CAMPAIGN_P99_RATIO = 1.25;

function campaignGoal(r: Results): Goal | undefined {
  const c = r.campaign;
  if (!c) return undefined;
  const { ahead, campaign, plan } = c;
  const clean = [ahead, campaign].every((d) => d.lost === 0 && d.duplicated === 0);
  return {
    goal: `campaign: ${num(plan.batches * plan.batchSize)} events in ${plan.batches} POST /api/events/batch calls of ${num(plan.batchSize)}, starting ${num(plan.leadMs / 1000)} s before the instant they share (median of ${plan.repeat} runs)`,
    target: `p99 ≤ ${CAMPAIGN_P99_RATIO}× the same burst created ${num(plan.aheadMs / 1000)} s ahead in the same run, none lost or duplicated`,
    measured: `${ms(campaign.p99)} ms against ${ms(ahead.p99)} ms (${ratio(campaign.p99 / ahead.p99)}); created in ${ms(campaign.ingestMs)} ms, ${lost(campaign, ahead)}`,
    met: campaign.p99 <= ahead.p99 * CAMPAIGN_P99_RATIO && clean,
  };
}

const lost = (...runs: CampaignRun[]) =>
  `${runs.reduce((sum, d) => sum + d.lost, 0)} lost, ${runs.reduce((sum, d) => sum + d.duplicated, 0)} duplicated`;

/** The campaign's runs: creation through the API and lateness, beside the burst created ahead. */
export function campaignSection(r: Results): string[] {
  const c = r.campaign;
  if (!c) return [];
  const { plan } = c;
  const line = (name: string, d: CampaignRun) =>
    row([
      name,
      num(d.n),
      num(d.ingestMs),
      signedMs(d.headroomMs),
      `${ms(Math.min(...d.answersMs))} / ${ms(Math.max(...d.answersMs))}`,
      ms(d.p50),
      ms(d.p99),
      ms(d.max),
      d.p99Runs.length > 1 ? d.p99Runs.map(ms).join(" / ") : "–",
      d.lost,
      d.duplicated,
    ]);
  return [
    "## Campaign",
    "",
    `${num(plan.batches * plan.batchSize)} events due at one instant, created through the API by ${plan.batches} \`POST /api/events/batch\``,
    `calls of ${num(plan.batchSize)} (one at a time, each event with a label), the first sent ${num(plan.leadMs / 1000)} s before that instant;`,
    `beside it, the same burst created ${num(plan.aheadMs / 1000)} s ahead. One worker (\`node --liftoff-only dist/worker.js\`, after its`,
    "warm-up bursts) and the API as the bursts have them; lateness at the loopback receiver. Each pair ran",
    `${plan.repeat} time${plan.repeat > 1 ? "s" : ""}; the rows are the runs with the median p99. headroom = the instant − the last answer.`,
    "",
    row([
      "burst",
      "N",
      "created in ms",
      "headroom ms",
      "batch answer min / max ms",
      "p50 ms",
      "p99 ms",
      "max ms",
      "p99 of each run",
      "lost",
      "dup.",
    ]),
    row(Array(11).fill("---")),
    line(`created ${num(plan.aheadMs / 1000)} s ahead`, c.ahead),
    line(`campaign, created from ${num(plan.leadMs / 1000)} s before`, c.campaign),
    "",
  ];
}

/** Finished jobs BullMQ keeps of the cron queue (KEEP_FINISHED_JOBS: 1,000 completed, 5,000 failed). */
const CRON_FINISHED_KEPT = 6_000;
/** Keys of the cron queue besides its jobs: scheduler, sets, events, marker, meta, id. */
const CRON_QUEUE_KEYS = 20;

function cronGoal(r: Results): Goal | undefined {
  const c = r.cron;
  if (!c) return undefined;
  const d = c.delivery;
  const kept = c.runsKeptPerJob;
  const runsBounded = kept === undefined ? c.runRows <= c.firings + 5 : c.runRowsMax <= kept + 5;
  const redisBounded = c.redis.maxKeys <= CRON_FINISHED_KEPT + 1 + CRON_QUEUE_KEYS;
  const duration = c.seconds >= 60 ? `${num(c.seconds / 60)} minutes` : `${num(c.seconds)} s`;
  return {
    goal: `a cron job firing every second for ${duration} on one worker`,
    target: `p99 lateness ≤ 50 ms, none lost or duplicated; its run rows ≤ ${kept === undefined ? "its firings" : `CRON_RUNS_KEPT_PER_JOB (${num(kept)})`} and its Redis keys ≤ the finished jobs BullMQ keeps`,
    measured: `p99 ${ms(d.p99)} ms over ${num(d.n)} runs, ${d.lost} lost, ${d.duplicated} duplicated; ${num(c.runRows)} run rows; Redis ${num(c.redis.before.keys)} → ${num(c.redis.after.keys)} keys, ${mbExact(c.redis.before.bytes)} → ${mbExact(c.redis.after.bytes)}`,
    met: d.p99 <= 50 && d.lost === 0 && d.duplicated === 0 && runsBounded && redisBounded,
  };
}

/** A cron job firing every second: every figure of bench/lib/cron.ts. */
export function cronSection(r: Results): string[] {
  const c = r.cron;
  if (!c) return [];
  const d = c.delivery;
  const { before, after } = c.redis;
  const perFiring = (bytes: number) => num(bytes / Math.max(1, c.firings));
  return [
    "## A cron job firing every second",
    "",
    `One cron job, \`${c.expression}\` in UTC, created as the API creates it (core \`createCronJob\`, then its BullMQ job`,
    `scheduler, built with the schedules' repeat strategy), fired for ${num(c.seconds)} s on a worker of its own`,
    "(`node --liftoff-only dist/worker.js`, default settings) to the loopback receiver, then disabled and its scheduler",
    "taken off. Lateness is each run's first arrival at the receiver − its `scheduledFor`, over the firings of the",
    "span (`firingsBetween`; a firing without a run counts as lost). Redis figures are the keys under the cron queue's",
    "prefix and their `MEMORY USAGE`; `used_memory` is the whole server's, which other work may share. BullMQ keeps",
    "at most 1,000 completed and 5,000 failed jobs of the queue (`KEEP_FINISHED_JOBS`), and a job at most",
    `${c.runsKeptPerJob === undefined ? "its runs within HISTORY_DAYS" : `${num(c.runsKeptPerJob)} runs (\`CRON_RUNS_KEPT_PER_JOB\`)`}: both bound what a job firing every second leaves behind.`,
    "",
    row(["measurement", "value"]),
    row(["---", "---:"]),
    row(["firings in the span", num(c.firings)]),
    row(["runs delivered", num(d.n - d.lost)]),
    row(["lost / duplicated", `${d.lost} / ${d.duplicated}`]),
    row(["lateness p50 / p99 / max", `${ms(d.p50)} / ${ms(d.p99)} / ${ms(d.max)} ms`]),
    row([
      "BullMQ's hand-over (the job taken − the time it was due, a lead before its firing) p50 / p99 / max",
      `${ms(c.handOver.p50)} / ${ms(c.handOver.p99)} / ${ms(c.handOver.max)} ms (${num(c.handOver.n)} jobs)`,
    ]),
    row(["worker CPU per firing (all its work over the span ÷ the firings)", `${c.cpuMsPerFiring.toFixed(2)} ms`]),
    row(["run rows at the end (most seen)", `${num(c.runRows)} (${num(c.runRowsMax)})`]),
    row([
      "Redis keys of the cron queue: before → after (most seen)",
      `${num(before.keys)} → ${num(after.keys)} (${num(c.redis.maxKeys)})`,
    ]),
    row([
      "Redis bytes of those keys: before → after",
      `${mbExact(before.bytes)} → ${mbExact(after.bytes)} (${perFiring(after.bytes - before.bytes)} bytes per firing)`,
    ]),
    row(["finished jobs kept by BullMQ: before → after", `${num(before.finishedJobs)} → ${num(after.finishedJobs)}`]),
    row([
      "Redis `used_memory` (whole server): before → after",
      `${mbExact(before.usedMemory)} → ${mbExact(after.usedMemory)}`,
    ]),
    "",
  ];
}

/** Bytes of live heap per held event, from bench/prepared-memory.ts. */
export function preparedMemorySection(r: Results): string[] {
  const m = r.preparedMemory;
  if (!m) return [];
  const per = (bytes: number) => num(Math.round((bytes - m.idle) / m.n));
  return [
    `Live heap per held event (\`bench/prepared-memory.ts\`: a worker holding ${num(m.n)} events, its heap measured after`,
    `full collections; ${mb(m.idle)} idle): **${per(m.prepared)} bytes per prepared event** (taken from Redis, read, waiting for`,
    `its claim), **${per(m.claimed)} bytes once claimed and signed** (payload, destination, secrets and the signed request).${m.late ? " (The claim came late: the figures are not reliable.)" : ""}`,
    "",
  ];
}

export function profileSection(r: Results): string[] {
  if (!r.profile) return [];
  const { n, delivery, beforeDue: before, afterDue: after } = r.profile;
  const beforeMs = new Map(before.byPackage.map((e) => [e.name, e.ms]));
  const busy = after.busyMs || 1;
  return [
    `## CPU profile of the worker (${num(n)} events due at one instant, \`node --cpu-prof\`)`,
    "",
    `Self time of the worker process, idle excluded: **${num(before.busyMs)} ms before the due time** (from queueing:`,
    `claims and preparation, ahead of the instant) and **${num(after.busyMs)} ms after it** (sending and recording,`,
    `until the last arrival): **${(after.busyMs / n).toFixed(2)} ms of worker CPU per delivery after the due time**, the`,
    "work that makes deliveries late. The profiled burst itself (slowed by the profiler): p99",
    `${ms(delivery.p99)} ms, ${num(delivery.perSecond)} deliveries/s. Open \`bench/worker-burst.cpuprofile\` in Chrome DevTools for the rest.`,
    "",
    row(["package (self time)", "ms after due", "share after due", "ms before due"]),
    row(["---", "---:", "---:", "---:"]),
    ...after.byPackage
      .slice(0, 14)
      .map((e) => row([e.name, num(e.ms), `${((e.ms / busy) * 100).toFixed(1)} %`, num(beforeMs.get(e.name) ?? 0)])),
    "",
    row(["function (self time after due)", "where", "ms"]),
    row(["---", "---", "---:"]),
    ...after.byFunction.slice(0, 12).map((e) => row([`\`${e.name}\``, e.where ? `\`${e.where}\`` : "", num(e.ms)])),
    "",
  ];
}

/** The transport comparison: undici (the worker's) against got, N requests each, median of the runs. */
/** This part's own goals (bench/lib/volume.ts), judged on the data set of `r.volume.events` events. */
function volumeGoals(r: Results): Goal[] {
  const v = r.volume;
  if (!v) return [];
  const over = `over ${num(v.events)} events and ${num(v.attempts)} attempts`;
  const clean = (h: VolumeHttp) => h.non2xx === 0 && h.errors === 0;
  const http = (goal: string, h: VolumeHttp, limit: number): Goal => ({
    goal: `${goal}, ${over}`,
    target: `p99 ≤ ${num(limit)} ms`,
    measured: `p99 ${ms(h.p99)} ms over ${num(h.requests)} requests`,
    met: h.p99 <= limit && clean(h),
  });
  const share = v.createsDuringRetention.perSecond / v.createsAlone.perSecond;
  return [
    {
      goal: `claimEvents of 500 due Pending events of one organization, ${over}`,
      target: "p99 ≤ 50 ms",
      measured: `p99 ${ms(v.claim.p99)} ms over ${v.claim.runs} batches`,
      met: v.claim.p99 <= 50,
    },
    {
      goal: `recordAttempts of 500 (→ Sent), ${over}`,
      target: "p99 ≤ 50 ms",
      measured: `p99 ${ms(v.record.p99)} ms over ${v.record.runs} batches`,
      met: v.record.p99 <= 50,
    },
    http("GET /api/events, 1,000 rows of the big organization", v.listAll, 100),
    http("GET /api/events?status=Sent within 7 days, 1,000 rows", v.listFiltered, 100),
    ...v.listCampaigns.map((c) =>
      http(`GET /api/events?label=… of a campaign of ${num(c.labelled)} events, a page of 1,000`, c, 100),
    ),
    http(
      `GET /api/events?label=… of a customer's ${num(v.listCustomer.labelled)} events spread over the data set, first page`,
      v.listCustomer,
      100,
    ),
    http(`GET /api/events?flowKey=… of a flow of ${num(v.listFlow.labelled)} events, 1,000 rows`, v.listFlow, 100),
    http("GET /api/events/{id} with its history", v.get, 20),
    {
      goal: `POST /api/events while retention deletes a day (${num(v.retention.eventsDeleted)} events, ${num(v.retention.attemptsDeleted)} attempts)`,
      target: "creates/s ≥ 80 % of those without retention",
      measured: `${num(v.createsDuringRetention.perSecond)}/s against ${num(v.createsAlone.perSecond)}/s (${(share * 100).toFixed(0)} %)`,
      met: share >= 0.8 && clean(v.createsDuringRetention),
    },
  ];
}

/** Postgres at volume: the data set, its seeding, and every figure of bench/lib/volume.ts. */
export function volumeSection(r: Results): string[] {
  const v = r.volume;
  if (!v) return [];
  const t = v.seedTimings;
  const timingRow = (name: string, x: { runs: number; p50: number; p99: number; max: number }) =>
    row([name, `${x.runs} batches`, "", "", ms(x.p50), ms(x.p99), ms(x.max), "", ""]);
  const httpRow = (name: string, h: VolumeHttp, how: string) =>
    row([name, how, num(h.requests), num(h.perSecond), ms(h.p50), ms(h.p99), ms(h.max), h.non2xx, h.errors]);
  const rt = v.retention;
  return [
    "## Postgres at volume",
    "",
    `${num(v.events)} events and ${num(v.attempts)} attempt rows over 60 days across ${num(v.organizations)}`,
    `organizations, ${num(v.bigOrgEvents)} of the events in one big organization; 91 % Sent (1 to 3 attempts), 4 % Failed To`,
    "Send (4 attempts), 5 % Pending in the data set's future, a few Queued after one failed attempt. Written by set-based SQL",
    "(`INSERT … SELECT … FROM generate_series`, bench/lib/volume-seed.ts) with the secondary indexes dropped and built after",
    t
      ? `the load, by this run in ${num(t.totalMs / 1000)} s (inserts ${num(t.insertEventsAndAttemptsMs / 1000)} s, indexes ${num(t.indexMs / 1000)} s, VACUUM ANALYZE ${num(t.vacuumAnalyzeMs / 1000)} s).`
      : "the load; reused from an earlier run (kept in a database of its own).",
    "claimEvents and recordAttempts are the core functions called from the harness's process (one batch at a time, fresh",
    "Pending rows of the big organization each batch); the GETs go to `node --liftoff-only dist/api.js`, one request at a",
    "time, each from a random time (the filtered list: status Sent within a random 7-day range). The big organization's events",
    "carry labels and flows: two campaigns of 1 % and 0.04 % of the data set, each due one event after another (listed from a",
    "random time within it), one of 1,000 customers each (a random customer's first page: its events lie one in 2,500 across the table) and one of",
    "100 flows (a random flow's first page). Retention is the worker's",
    "retention run (batches of `RETENTION_BATCH_SIZE`, SKIP LOCKED) with its clock set so that the data set's first day lies",
    `past the search window, while autocannon POSTs events (${v.plan.connections} connections, due in 30 min) to the same API;`,
    `the same load ran ${v.plan.loadSeconds} s alone before. The deleted rows are put back afterwards.`,
    "",
    row(["measurement", "load", "requests", "2xx/s", "p50 ms", "p99 ms", "max ms", "non-2xx", "errors"]),
    row(Array(9).fill("---")),
    timingRow(`claimEvents of ${num(v.plan.batchSize)}`, v.claim),
    timingRow(`recordAttempts of ${num(v.plan.batchSize)}`, v.record),
    httpRow(`GET /api/events (1,000 rows)`, v.listAll, "1 connection"),
    httpRow(`GET /api/events?status=Sent, 7 days (1,000 rows)`, v.listFiltered, "1 connection"),
    ...v.listCampaigns.map((c) =>
      httpRow(
        `GET /api/events?label=campaign:${c.value} (${num(c.labelled)} events, a page of 1,000)`,
        c,
        "1 connection",
      ),
    ),
    httpRow(
      `GET /api/events?label=customer:… (${num(v.listCustomer.labelled)} events, first page)`,
      v.listCustomer,
      "1 connection",
    ),
    httpRow(`GET /api/events?flowKey=… (${num(v.listFlow.labelled)} events, 1,000 rows)`, v.listFlow, "1 connection"),
    httpRow(`GET /api/events/{id} (history of ${v.get.historyLength} on the first)`, v.get, "1 connection"),
    httpRow("POST /api/events, alone", v.createsAlone, "autocannon"),
    httpRow("POST /api/events, during retention", v.createsDuringRetention, "autocannon"),
    "",
    row(["retention", ""]),
    row(["---", "---:"]),
    row(["events deleted", num(rt.eventsDeleted)]),
    row(["attempts deleted (with their events)", num(rt.attemptsDeleted)]),
    row(["duration", `${num(rt.durationMs)} ms`]),
    row(["rows deleted per second", num(rt.rowsPerSecond)]),
    row(["batch size (`RETENTION_BATCH_SIZE`)", num(rt.batchSize)]),
    row(["finished within its time budget", rt.complete ? "yes" : "no"]),
    row(["putting the day back (not measured load)", `${num(rt.restoreMs)} ms`]),
    "",
  ];
}

/** Redis memory with and without the enqueue horizon, and the unit costs of an event. */
export function horizonSection(r: Results): string[] {
  const h = r.horizon;
  if (!h) return [];
  const days = `${num(h.events)} Pending events spread evenly over the next ${h.days} days`;
  return [
    "## Redis memory and the enqueue horizon",
    "",
    `${days}, inserted in a fresh database (payload \`${"{"}"hello":"world"}\`, ${h.postgres.payloadBytes} bytes), then`,
    "queued into a Redis server of this measurement's own (`used_memory` of `INFO memory`, less the empty",
    `server's ${mbExact(h.baseUsedMemoryBytes)}): once through the event queue with the horizon off (\`ENQUEUE_HORIZON_MS\``,
    "very large: every event's job at once, as before the horizon), then, on the emptied server, by the feeder's",
    `passes with the default horizon (${num(h.horizonMs / 60_000)} min), from no cursor, as after a start or a flush.`,
    "Postgres sizes are `pg_total_relation_size` deltas (heap, TOAST and every index) after `VACUUM ANALYZE`;",
    "an attempt row is a first-attempt success (status 200, no error).",
    "",
    row(["measurement", "value"]),
    row(["---", "---:"]),
    row(["horizon off: jobs in Redis (delayed, or waiting once due)", num(h.off.jobs)]),
    row(["horizon off: Redis `used_memory` of those jobs", mbExact(h.off.usedMemoryBytes)]),
    row(["**Redis bytes per delayed job**", num(h.off.bytesPerJob)]),
    row(["horizon off: queueing them through the event queue (addBulk of 1,000)", `${num(h.off.enqueueMs)} ms`]),
    row(["default horizon: jobs in Redis after the feeder", num(h.on.jobs)]),
    row(["default horizon: Pending events due within the horizon", num(h.on.dueWithinHorizon)]),
    row(["default horizon: Redis `used_memory` of those jobs", mbExact(h.on.usedMemoryBytes)]),
    row([
      "default horizon: the feeder walking the whole horizon from no cursor",
      `${num(h.on.feedMs)} ms in ${h.on.runs} pass(es)`,
    ]),
    row([
      "Redis memory, default horizon ÷ horizon off",
      `${((100 * h.on.usedMemoryBytes) / h.off.usedMemoryBytes).toFixed(2)} %`,
    ]),
    row(["**Postgres bytes per Pending event** (events with its indexes)", num(h.postgres.bytesPerEvent)]),
    row(["**Postgres bytes per attempt** (event_attempts with its indexes)", num(h.postgres.bytesPerAttempt)]),
    "",
  ];
}

export function transportSection(r: Results): string[] {
  if (!r.transports?.length) return [];
  const repeat = r.transports[0]?.wallRuns.length ?? 0;
  return [
    "## HTTP clients",
    "",
    `One process per client puts N delivery-sized signed POSTs (≈150-byte JSON body, Standard Webhooks headers) on`,
    `the wire to the loopback receiver, ${IN_FLIGHT} in flight, through the worker's Transport interface with the same rules`,
    "(keep-alive, at most 64 connections, guarded lookup, no redirects, one timeout, 64 KiB read limit): undici is",
    "`services/worker/src/delivery/http-transport.ts`, got is `bench/lib/got-transport.ts`. After one warm-up run of",
    `1,000, each N ran ${repeat} time${repeat === 1 ? "" : "s"}: wall time and CPU per request are medians; CPU is the client`,
    "process's `process.cpuUsage()` (user + system) during the run; RSS is the client process's after the runs of",
    "that N, and once loaded before any request (runtime and tsx alone). The receiver runs in its own process and",
    "bounds the wall time.",
    "",
    row([
      "client",
      "N",
      "wall ms",
      "wall ms of each run",
      "requests/s",
      "CPU ms per request",
      "RSS after",
      "RSS idle",
      "2xx / sent",
    ]),
    row(["---", "---:", "---:", "---", "---:", "---:", "---:", "---:", "---:"]),
    ...r.transports.map((t) =>
      row([
        t.client,
        num(t.n),
        ms(t.wallMs),
        t.wallRuns.map(ms).join(" / "),
        num((t.n / t.wallMs) * 1000),
        t.cpuMsPerRequest.toFixed(3),
        mb(t.rssBytes),
        mb(t.rssIdleBytes),
        `${num(t.ok)} / ${num(t.sent)}`,
      ]),
    ),
    "",
  ];
}

/** Lateness histograms of the raw baseline and Punctual, one panel per burst size. */
export function latenessSvg(panels: { title: string; series: { name: string; color: string; values: number[] }[] }[]) {
  const width = 720;
  const panelHeight = 240;
  const margin = { left: 56, right: 40, top: 48, bottom: 36 };
  const plotWidth = width - margin.left - margin.right;
  const plotHeight = panelHeight - margin.top - margin.bottom;
  const bins = 50;
  const parts: string[] = [];
  panels.forEach((panel, index) => {
    const y0 = index * panelHeight;
    const all = panel.series.flatMap((s) => s.values);
    const lo = Math.min(0, ...all);
    const hi = Math.max(lo + 1, ...all);
    const binWidth = (hi - lo) / bins;
    const counts = panel.series.map((s) => {
      const c = Array<number>(bins).fill(0);
      for (const v of s.values) {
        const b = Math.min(bins - 1, Math.floor((v - lo) / binWidth));
        c[b] = (c[b] ?? 0) + 1;
      }
      return c;
    });
    const top = Math.max(1, ...counts.flat());
    const x = (v: number) => margin.left + ((v - lo) / (hi - lo)) * plotWidth;
    const y = (c: number) => y0 + margin.top + plotHeight - (c / top) * plotHeight;
    parts.push(`<text x="${margin.left}" y="${y0 + 18}" font-weight="bold">${panel.title}</text>`);
    counts.forEach((c, s) => {
      const color = panel.series[s]?.color ?? "black";
      c.forEach((count, b) => {
        if (count === 0) return;
        const bx = x(lo + b * binWidth);
        parts.push(
          `<rect x="${bx.toFixed(1)}" y="${y(count).toFixed(1)}" width="${Math.max(1, plotWidth / bins - 1).toFixed(1)}" height="${(y(0) - y(count)).toFixed(1)}" fill="${color}" fill-opacity="0.55"/>`,
        );
      });
    });
    const axisY = y(0);
    parts.push(`<line x1="${margin.left}" y1="${axisY}" x2="${width - margin.right}" y2="${axisY}" stroke="#333"/>`);
    for (let t = 0; t <= 5; t++) {
      const v = lo + ((hi - lo) * t) / 5;
      parts.push(`<text x="${x(v).toFixed(1)}" y="${axisY + 16}" text-anchor="middle">${Math.round(v)} ms</text>`);
    }
    parts.push(`<text x="${margin.left - 6}" y="${y(top) + 4}" text-anchor="end">${top}</text>`);
    parts.push(`<text x="${margin.left - 6}" y="${axisY}" text-anchor="end">0</text>`);
    panel.series.forEach((s, i) => {
      const lx = margin.left + i * 320;
      const ly = y0 + 36;
      parts.push(`<rect x="${lx}" y="${ly - 9}" width="10" height="10" fill="${s.color}" fill-opacity="0.55"/>`);
      parts.push(`<text x="${lx + 16}" y="${ly}">${s.name}</text>`);
    });
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${panels.length * panelHeight}" font-family="sans-serif" font-size="11">`,
    "<title>Lateness histograms: raw BullMQ baseline and Punctual</title>",
    `<rect width="100%" height="100%" fill="white"/>`,
    ...parts,
    "</svg>",
    "",
  ].join("\n");
}

/** Writes RESULTS.md and lateness.svg into `dir`; returns the report's path. */
export function writeReport(r: Results, dir: string): string {
  const panels = [...r.bursts].map(([n, d]) => ({
    title: `${num(n)} deliveries due at one instant: lateness (arrival − due time), count per bin`,
    series: [
      {
        name: `raw BullMQ baseline (p99 ${ms(r.baseline.get(n)?.p99 ?? Number.NaN)} ms)`,
        color: "#888888",
        values: r.baseline.get(n)?.lateness ?? [],
      },
      { name: `Punctual, 1 worker (p99 ${ms(d.p99)} ms)`, color: "#1f6fd0", values: d.lateness },
    ],
  }));
  writeFileSync(join(dir, "lateness.svg"), latenessSvg(panels));

  const judged = !r.smoke;
  const goalLines = goals(r).map((g) =>
    row([g.goal, g.target, g.measured, judged && g.met !== undefined ? verdict(g.met) : "not judged (smoke sizes)"]),
  );
  const memory = r.memory.map((m) =>
    row([
      m.process,
      m.burst !== undefined && m.process.startsWith("api")
        ? `${m.during} (idle: its events are created in Postgres)`
        : m.during,
      mb(m.bytes),
    ]),
  );
  const deliveries = [...r.baseline.values(), ...r.bursts.values(), ...r.throughput.values()];
  const headroom = Math.min(...deliveries.map((d) => d.headroomMs));
  const http = (name: string, load: HttpLoad, how: string) =>
    row([
      name,
      how,
      num(load.requests),
      num(load.perSecond),
      ms(load.p50),
      ms(load.p99),
      ms(load.max),
      load.non2xx,
      load.errors,
    ]);

  const text = [
    "# Benchmark results",
    "",
    "Written by `pnpm bench` (`bench/run.ts`); every figure below comes from the same run. Everything runs on",
    "loopback on this one machine: receiver, workers, API, Postgres, Redis and the load generator share its cores.",
    "",
    row(["", ""]),
    row(["---", "---"]),
    ...machine(r).map(([k, v]) => row([k, v])),
    "",
    "## Goals",
    "",
    row(["goal", "target", "measured", "verdict"]),
    row(["---", "---", "---", "---"]),
    ...goalLines,
    "",
    "## Deliveries",
    "",
    "Lateness is arrival at the receiver − the due time (`scheduledTime`; for the raw baseline, the",
    "jobs' common due time). deliveries/s = (arrivals − 1) / (last arrival − first arrival). The raw",
    `baseline is one BullMQ worker process at concurrency ${r.baselineConcurrency} POSTing with undici over keep-alive, no database.`,
    "Punctual events are inserted into Postgres and queued with the event queue's `scheduleMany` (not measured),",
    "then delivered by `node --liftoff-only dist/worker.js` processes (the bundle of `pnpm build`, as in the image, with the",
    "image's allocator settings `MALLOC_ARENA_MAX=2` and `MALLOC_MMAP_THRESHOLD_=131072`, as the raw baseline has too)",
    "with default settings unless a row names others. A worker takes each job `PREPARE_AHEAD_MS` before its time, claims",
    "it `CLAIM_LEAD_MS` before, and hands every request due at an instant to its dispatcher in one pass",
    "([How delivery works](../docs/architecture.md#how-delivery-works)). answer → row committed is the worker's `punctual_attempt_record_lag_seconds` histogram",
    "over the burst (the bound of the bucket holding the 99th percentile).",
    `Worker CPU is user + system time from /proc. Before the measured bursts each worker (and the raw baseline)`,
    `delivered ${r.plan.warmup.bursts} warm-up bursts of ${num(r.plan.warmup.size)}, as a worker that has run for a while has: the`,
    "first burst after a start (after the worker's own warm-up, `WORKER_WARMUP_REQUESTS`) has its own row and goal, each run",
    "with a worker started for it.",
    r.plan.repeat > 1
      ? `Each burst ran ${r.plan.repeat} times: the row is the run with the median p99; lost and duplicated count all runs.`
      : "",
    headroom >= 0
      ? `Every burst was queued at least ${num(headroom)} ms before its due time (for Punctual: before its claim time, due − CLAIM_LEAD_MS).`
      : `**A burst was still being queued ${num(-headroom)} ms after its due (or claim) time: its lateness includes creation.**`,
    `The receiver alone answers ${num(r.receiverPerSecond ?? Number.NaN)} req/s (autocannon, 50 connections).`,
    "",
    ...deliveryRows(r),
    "",
    "![Lateness histograms](lateness.svg)",
    "",
    "## API",
    "",
    "`node --liftoff-only dist/api.js` with `RATE_LIMIT_PER_MINUTE` and `MAX_EVENTS_PER_MONTH` raised to",
    "1,000,000,000; load from autocannon in the harness's process. POST bodies are one event due in 30 min",
    "(inside the enqueue horizon: each create also queues its delayed job); GET asks",
    `for the 1,000 events from a random \`scheduledStartDate\` of one organization with ${num(r.list?.storedRows ?? 0)} stored events`,
    `(seeded with one \`INSERT … SELECT generate_series\`${r.list?.seeded === false ? ", reused from an earlier run" : ""}), one request at a time.`,
    `GET /api/stats asks for windows in hour buckets over one organization's ${num(r.stats?.storedRows ?? 0)} events spread over 30`,
    "days, 96 % sent at the first attempt, 2 % sent at the 2nd to 4th, 2 % failed after 4, with their attempts",
    `${r.stats?.seeded === false ? "(reused from an earlier run)" : "(seeded by this run)"}, beside a noisy neighbour: another organization's ${num(r.stats?.neighbourFailures ?? 0)} failed attempts`,
    "(events failed after 4 attempts that timed out) over the last 24 hours of the history, in every window: what one",
    "organization's statistics cost must not depend on another's failures.",
    "Each window ends half an hour before the history does, as a window ending",
    "now would: its partial first and last hours are computed from the history at every request, the settled hours",
    "in between only by an API's first request (then kept). Each window has an API of its own; its first request is",
    "reported beside the goal, the table shows the requests after it, one at a time.",
    "",
    row(["request", "load", "requests", "2xx/s", "p50 ms", "p99 ms", "max ms", "non-2xx", "errors"]),
    row(Array(9).fill("---")),
    ...(r.post
      ? [http("POST /api/events", r.post, `${r.plan.post.connections} connections, ${r.plan.post.seconds} s`)]
      : []),
    ...(r.list
      ? [http(`GET /api/events (${num(r.list.rowsPerPage)} rows)`, r.list, `1 connection, ${r.list.requests} requests`)]
      : []),
    ...(r.stats?.windows ?? []).map((window) =>
      http(`GET /api/stats (${window.label}, hour buckets)`, window, `1 connection, ${window.requests} requests`),
    ),
    "",
    "## Memory",
    "",
    "Peak RSS (VmRSS of the node process itself, sampled every 100 ms) during load; the idle rows are one reading at",
    "that moment. The idle goal is judged on a worker left idle after its start, once V8 has given back what",
    "its warm-up grew. MB = 10⁶ bytes.",
    "",
    row(["process", "during", "peak RSS"]),
    row(["---", "---", "---:"]),
    ...memory,
    "",
    ...campaignSection(r),
    ...preparedMemorySection(r),
    ...cronSection(r),
    ...horizonSection(r),
    ...volumeSection(r),
    ...transportSection(r),
    ...profileSection(r),
  ].join("\n");
  const file = join(dir, "RESULTS.md");
  writeFileSync(file, text);
  return file;
}
