import type { Redis } from "../redis.ts";

// What holds deliveries back across every worker process (contract §10.2 and §10.3), kept in Redis
// so that no limit lives in one worker's memory:
//
// - a flow's starts in its window (a sliding log: a sorted set of start times, at most `rate` long)
//   and its leases in flight (a sorted set of lease ids scored by their expiry, so that a crashed
//   worker's leases come back by themselves once the attempt could no longer be running);
// - each organization's origins' health (a hash: state, failures in a row, since, last probe), the
//   circuit breaker: failures in a row make an origin Unhealthy, then one probe goes at a time;
// - what each worker holds back, per flow and per origin (a summary refreshed every second that
//   expires with its worker), so the API can say how many deliveries wait and since when.
//
// Each decision is one script: reading the counts and taking a start or a lease cannot interleave
// with another worker's. The scripts take their clock from Redis (TIME), one clock for every worker.
// Every key is under the queue prefix, whose hash tag puts them in one slot of a Redis Cluster.

/** A flow's limits and pause, as its record in Postgres says (null: no such limit). */
export interface FlowLimits {
  rate: number | null;
  periodMs: number;
  parallelism: number | null;
  paused: boolean;
}

/** Why deliveries wait: their origin is Unhealthy, or their flow is paused or at a limit. */
export type HoldReason = "unhealthy" | "paused" | "parallelism" | "rate";

export type Admitted =
  /** `granted` of the asked attempts may start now; `leases` are theirs to release (flows only). */
  | { granted: number; leases: string[]; probe: boolean }
  /** None may start; `waitMs` is when asking again can succeed (0: not known, ask again soon). */
  | { granted: 0; reason: HoldReason; waitMs: number };

/** One ask: `wanted` attempts of an organization to an origin, in a flow or none. */
export interface AdmissionAsk {
  orgId: string;
  origin: string;
  wanted: number;
  flow?: { key: string; limits: FlowLimits; leaseMs: number } | undefined;
  probeMs: number;
}

export interface BreakerSettings {
  failures: number;
  minSpanMs: number;
}

export type HealthState = "Healthy" | "Unhealthy";

export interface HealthReport {
  state: HealthState;
  /** The state this report changed the origin to; undefined when it did not change it. */
  changed: HealthState | undefined;
  consecutiveFailures: number;
}

export interface DestinationHealth {
  origin: string;
  state: HealthState;
  consecutiveFailures: number;
  /** When it entered its state (or was first seen), ms since the epoch. */
  since: number;
}

/** How many deliveries one worker holds back for a flow or an origin, and the oldest one's due time. */
export interface HeldSummary {
  waiting: number;
  oldestWaitingSince: number | undefined;
}

/** How long an origin's health record, and its place in the organization's list, outlive its last attempt. */
export const HEALTH_RETENTION_MS = 30 * 24 * 3_600_000;
/** How long a worker's summary of what it holds back outlives its last refresh. */
export const HELD_SUMMARY_TTL_MS = 3_000;

const keys = (prefix: string) => ({
  health: (orgId: string, origin: string) => `${prefix}:health:${orgId}:${origin}`,
  origins: (orgId: string) => `${prefix}:origins:${orgId}`,
  unhealthy: () => `${prefix}:unhealthy`,
  starts: (orgId: string, flowKey: string) => `${prefix}:flow:${orgId}:${flowKey}:starts`,
  leases: (orgId: string, flowKey: string) => `${prefix}:flow:${orgId}:${flowKey}:leases`,
  leaseSeq: () => `${prefix}:flow-lease-seq`,
  held: (orgId: string, workerId: string) => `${prefix}:held:${orgId}:${workerId}`,
  holders: (orgId: string) => `${prefix}:holders:${orgId}`,
});

const NOW = `local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

// KEYS: health, starts, leases, lease sequence. ARGV: wanted, in a flow (0/1), rate (0: none),
// periodMs, parallelism (0: none), paused (0/1), leaseMs, probeMs.
// Answers { granted, reason, waitMs, first lease id, probe (0/1) }.
const ADMIT = `${NOW}
local wanted = tonumber(ARGV[1])
local probe = 0
if redis.call("HGET", KEYS[1], "state") == "Unhealthy" then
  local probeMs = tonumber(ARGV[8])
  local last = tonumber(redis.call("HGET", KEYS[1], "probeAt") or "0")
  if now - last < probeMs then return {0, "unhealthy", last + probeMs - now, 0, 0} end
  probe = 1
  wanted = 1
end
local first = 0
if ARGV[2] == "1" then
  if ARGV[6] == "1" then return {0, "paused", 0, 0, 0} end
  local leaseMs = tonumber(ARGV[7])
  redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", now)
  local parallelism = tonumber(ARGV[5])
  if parallelism > 0 then
    local free = parallelism - redis.call("ZCARD", KEYS[3])
    if free <= 0 then
      local soonest = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
      return {0, "parallelism", tonumber(soonest[2]) - now, 0, 0}
    end
    if free < wanted then wanted = free end
  end
  local rate = tonumber(ARGV[3])
  local period = tonumber(ARGV[4])
  if rate > 0 then
    redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now - period)
    local free = rate - redis.call("ZCARD", KEYS[2])
    if free <= 0 then
      local oldest = redis.call("ZRANGE", KEYS[2], 0, 0, "WITHSCORES")
      return {0, "rate", tonumber(oldest[2]) + period - now, 0, 0}
    end
    if free < wanted then wanted = free end
  end
  first = redis.call("INCRBY", KEYS[4], wanted) - wanted + 1
  -- One ZADD per set for a chunk of starts, not one per start: a line asks for a whole burst's
  -- attempts at once, and each call costs Redis more than the member it adds. Chunks keep unpack
  -- within Lua's stack.
  for from = 0, wanted - 1, 1000 do
    local starts, leases = {}, {}
    for i = from, math.min(from + 1000, wanted) - 1 do
      if rate > 0 then
        starts[#starts + 1] = now
        starts[#starts + 1] = first + i
      end
      leases[#leases + 1] = now + leaseMs
      leases[#leases + 1] = first + i
    end
    if rate > 0 then redis.call("ZADD", KEYS[2], unpack(starts)) end
    redis.call("ZADD", KEYS[3], unpack(leases))
  end
  if rate > 0 then redis.call("PEXPIRE", KEYS[2], period) end
  redis.call("PEXPIRE", KEYS[3], leaseMs)
end
if probe == 1 then redis.call("HSET", KEYS[1], "probeAt", now) end
return {wanted, "", 0, first, probe}`;

// KEYS: health, origins of the organization, unhealthy origins of every organization.
// ARGV: origin, failures, minSpanMs, retentionMs, outcomes ("f" failed, "s" answered), member in
// the unhealthy set. Answers { state, changed ("" when not), failures in a row }.
const REPORT = `${NOW}
local state = redis.call("HGET", KEYS[1], "state") or "Healthy"
local before = state
local failures = tonumber(redis.call("HGET", KEYS[1], "failures") or "0")
local firstAt = tonumber(redis.call("HGET", KEYS[1], "firstFailureAt") or "0")
local since = tonumber(redis.call("HGET", KEYS[1], "since") or tostring(now))
local threshold = tonumber(ARGV[2])
local minSpan = tonumber(ARGV[3])
local outcomes = ARGV[5]
for i = 1, #outcomes do
  if string.sub(outcomes, i, i) == "f" then
    failures = failures + 1
    if failures == 1 then firstAt = now end
    if state ~= "Unhealthy" and failures >= threshold and now - firstAt >= minSpan then
      state = "Unhealthy"
      since = now
      redis.call("HSET", KEYS[1], "probeAt", now)
    end
  else
    failures = 0
    firstAt = 0
    if state == "Unhealthy" then
      state = "Healthy"
      since = now
    end
  end
end
redis.call("HSET", KEYS[1], "state", state, "failures", failures, "firstFailureAt", firstAt, "since", since)
local retention = tonumber(ARGV[4])
redis.call("PEXPIRE", KEYS[1], retention)
redis.call("ZADD", KEYS[2], now, ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now - retention)
redis.call("PEXPIRE", KEYS[2], retention)
if state == "Unhealthy" then redis.call("SADD", KEYS[3], ARGV[6]) else redis.call("SREM", KEYS[3], ARGV[6]) end
local changed = ""
if state ~= before then changed = state end
return {state, changed, failures}`;

// KEYS: health, unhealthy origins of every organization. ARGV: member in the unhealthy set.
// Answers 1 when the origin had a record (it is Healthy now), 0 when it had none.
const RESET = `${NOW}
if redis.call("EXISTS", KEYS[1]) == 0 then return 0 end
redis.call("HSET", KEYS[1], "state", "Healthy", "failures", 0, "firstFailureAt", 0, "since", now)
redis.call("SREM", KEYS[2], ARGV[1])
return 1`;

// KEYS: the worker's summary, the organization's holders. ARGV: worker id, ttlMs, then field and
// value pairs (none: the worker holds nothing back for this organization any more).
const PUBLISH_HELD = `${NOW}
redis.call("DEL", KEYS[1])
if #ARGV <= 2 then
  redis.call("ZREM", KEYS[2], ARGV[1])
  return 0
end
for i = 3, #ARGV, 2 do redis.call("HSET", KEYS[1], ARGV[i], ARGV[i + 1]) end
local ttl = tonumber(ARGV[2])
redis.call("PEXPIRE", KEYS[1], ttl)
redis.call("ZADD", KEYS[2], now + ttl, ARGV[1])
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
redis.call("PEXPIRE", KEYS[2], ttl)
return 1`;

const REASONS = new Set<string>(["unhealthy", "paused", "parallelism", "rate"]);
const isReason = (value: string): value is HoldReason => REASONS.has(value);

const flowField = (flowKey: string) => `flow:${flowKey}`;
const originField = (origin: string) => `origin:${origin}`;

export interface AdmissionStore {
  /** Asks for `wanted` attempts to start now (one decision, atomic across workers). */
  admit(ask: AdmissionAsk): Promise<Admitted>;
  /** Gives leases back once their attempts are answered (several flows in one round trip). */
  release(batch: { orgId: string; flowKey: string; leases: string[] }[]): Promise<void>;
  /** Adds attempts' outcomes, in order, to an origin's failures in a row ("f" failed, "s" answered). */
  report(orgId: string, origin: string, outcomes: string, settings: BreakerSettings): Promise<HealthReport>;
  /**
   * Replaces what `workerId` holds back for an organization (by flow key and by origin); an empty
   * summary removes it. Expires HELD_SUMMARY_TTL_MS after the last call.
   */
  publishHeld(
    orgId: string,
    workerId: string,
    held: { flows: Map<string, HeldSummary>; origins: Map<string, HeldSummary> },
  ): Promise<void>;
  /** Deliveries of a flow waiting in every worker, and its leases in flight. */
  flowCounts(orgId: string, flowKey: string): Promise<HeldSummary & { inFlight: number }>;
  /** The same for several flows of one organization, by flow key: one read of the workers' summaries. */
  flowCountsOf(orgId: string, flowKeys: string[]): Promise<Map<string, HeldSummary & { inFlight: number }>>;
  /** The health of the organization's origins (those attempted within HEALTH_RETENTION_MS), with what waits for each. */
  destinations(orgId: string): Promise<(DestinationHealth & HeldSummary)[]>;
  /** Makes an origin Healthy at once; false when the organization has no record of it. */
  reset(orgId: string, origin: string): Promise<boolean>;
  /** Origins Unhealthy now, over every organization (a metric). */
  unhealthyCount(): Promise<number>;
}

function parseSummary(value: string | undefined): HeldSummary {
  if (!value) return { waiting: 0, oldestWaitingSince: undefined };
  const [waiting, oldest] = value.split(",");
  const since = Number(oldest);
  return { waiting: Number(waiting) || 0, oldestWaitingSince: Number.isFinite(since) && since > 0 ? since : undefined };
}

function addSummary(into: HeldSummary, more: HeldSummary): HeldSummary {
  const oldest =
    into.oldestWaitingSince === undefined
      ? more.oldestWaitingSince
      : more.oldestWaitingSince === undefined
        ? into.oldestWaitingSince
        : Math.min(into.oldestWaitingSince, more.oldestWaitingSince);
  return { waiting: into.waiting + more.waiting, oldestWaitingSince: oldest };
}

export function createAdmissionStore(redis: Redis, prefix: string): AdmissionStore {
  const key = keys(prefix);
  const unhealthyMember = (orgId: string, origin: string) => `${orgId} ${origin}`;

  /** The summaries of every live worker holding something back for the organization. */
  async function heldSummaries(orgId: string): Promise<Record<string, string>[]> {
    const now = Number((await redis.time())[0]) * 1000;
    const workers = await redis.zrangebyscore(key.holders(orgId), now, "+inf");
    if (workers.length === 0) return [];
    const pipeline = redis.pipeline();
    for (const worker of workers) pipeline.hgetall(key.held(orgId, worker));
    const answers = (await pipeline.exec()) ?? [];
    return answers.map(([, value]) => (value ?? {}) as Record<string, string>);
  }

  async function flowCountsOf(
    orgId: string,
    flowKeys: string[],
  ): Promise<Map<string, HeldSummary & { inFlight: number }>> {
    const counts = new Map<string, HeldSummary & { inFlight: number }>();
    if (flowKeys.length === 0) return counts;
    const now = Number((await redis.time())[0]) * 1000;
    const pipeline = redis.pipeline();
    for (const flowKey of flowKeys) pipeline.zcount(key.leases(orgId, flowKey), now, "+inf");
    const [summaries, inFlight] = await Promise.all([heldSummaries(orgId), pipeline.exec()]);
    flowKeys.forEach((flowKey, n) => {
      let total: HeldSummary = { waiting: 0, oldestWaitingSince: undefined };
      for (const summary of summaries) total = addSummary(total, parseSummary(summary[flowField(flowKey)]));
      counts.set(flowKey, { ...total, inFlight: Number(inFlight?.[n]?.[1] ?? 0) });
    });
    return counts;
  }

  return {
    async admit(ask) {
      const { flow } = ask;
      const flowKey = flow?.key ?? "";
      const answer = (await redis.eval(
        ADMIT,
        4,
        key.health(ask.orgId, ask.origin),
        key.starts(ask.orgId, flowKey),
        key.leases(ask.orgId, flowKey),
        key.leaseSeq(),
        ask.wanted,
        flow ? 1 : 0,
        flow?.limits.rate ?? 0,
        flow?.limits.periodMs ?? 1_000,
        flow?.limits.parallelism ?? 0,
        flow?.limits.paused ? 1 : 0,
        flow?.leaseMs ?? 0,
        ask.probeMs,
      )) as [number, string, number, number, number];
      const [granted, reason, waitMs, first, probe] = answer;
      if (granted === 0 && isReason(reason)) return { granted: 0, reason, waitMs: Math.max(0, waitMs) };
      const leases: string[] = [];
      if (flow) for (let n = 0; n < granted; n++) leases.push(String(first + n));
      return { granted, leases, probe: probe === 1 };
    },
    async release(batch) {
      const pipeline = redis.pipeline();
      for (const { orgId, flowKey, leases } of batch) {
        if (leases.length > 0) pipeline.zrem(key.leases(orgId, flowKey), ...leases);
      }
      if (pipeline.length > 0) await pipeline.exec();
    },
    async report(orgId, origin, outcomes, settings) {
      const [state, changed, failures] = (await redis.eval(
        REPORT,
        3,
        key.health(orgId, origin),
        key.origins(orgId),
        key.unhealthy(),
        origin,
        settings.failures,
        settings.minSpanMs,
        HEALTH_RETENTION_MS,
        outcomes,
        unhealthyMember(orgId, origin),
      )) as [HealthState, string, number];
      return {
        state,
        changed: changed === "Healthy" || changed === "Unhealthy" ? changed : undefined,
        consecutiveFailures: Number(failures),
      };
    },
    async publishHeld(orgId, workerId, held) {
      const fields: string[] = [];
      const add = (field: string, summary: HeldSummary) => {
        if (summary.waiting > 0) fields.push(field, `${summary.waiting},${summary.oldestWaitingSince ?? ""}`);
      };
      for (const [flowKey, summary] of held.flows) add(flowField(flowKey), summary);
      for (const [origin, summary] of held.origins) add(originField(origin), summary);
      await redis.eval(
        PUBLISH_HELD,
        2,
        key.held(orgId, workerId),
        key.holders(orgId),
        workerId,
        HELD_SUMMARY_TTL_MS,
        ...fields,
      );
    },
    async flowCounts(orgId, flowKey) {
      const counts = await flowCountsOf(orgId, [flowKey]);
      return counts.get(flowKey) ?? { waiting: 0, oldestWaitingSince: undefined, inFlight: 0 };
    },
    flowCountsOf,
    async destinations(orgId) {
      const origins = await redis.zrange(key.origins(orgId), 0, -1);
      const summaries = await heldSummaries(orgId);
      const pipeline = redis.pipeline();
      for (const origin of origins) pipeline.hgetall(key.health(orgId, origin));
      const records = (await pipeline.exec()) ?? [];
      const list: (DestinationHealth & HeldSummary)[] = [];
      origins.forEach((origin, n) => {
        const record = (records[n]?.[1] ?? {}) as Record<string, string>;
        if (!record.state) return;
        let held: HeldSummary = { waiting: 0, oldestWaitingSince: undefined };
        for (const summary of summaries) held = addSummary(held, parseSummary(summary[originField(origin)]));
        list.push({
          origin,
          state: record.state === "Unhealthy" ? "Unhealthy" : "Healthy",
          consecutiveFailures: Number(record.failures ?? 0),
          since: Number(record.since ?? 0),
          ...held,
        });
      });
      return list;
    },
    async reset(orgId, origin) {
      const found = await redis.eval(
        RESET,
        2,
        key.health(orgId, origin),
        key.unhealthy(),
        unhealthyMember(orgId, origin),
      );
      return Number(found) === 1;
    },
    unhealthyCount: () => redis.scard(key.unhealthy()),
  };
}
