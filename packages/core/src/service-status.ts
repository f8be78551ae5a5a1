import type { Redis } from "./redis.ts";

// What the workers tell the operator about themselves, kept in Redis under the queue prefix: each
// live worker's heartbeat, the reconciler's last run and the failure notices sent. Workers write
// it; the API's service-health endpoint reads it. Writes are best effort and every key expires or is
// trimmed on its own. The heartbeats also tell the workers which of them are alive: a Queued event
// stays with the worker that claimed it while that worker's heartbeat lasts (workerHeartbeatsLeft).

/** How often a worker renews its heartbeat. */
export const HEARTBEAT_INTERVAL_MS = 5_000;
/** A heartbeat not renewed within this is gone: its worker stopped or cannot reach Redis. */
export const HEARTBEAT_TTL_MS = 15_000;
/** The window of `failureNotices.sentLast24h`. */
const NOTICE_WINDOW_MS = 24 * 60 * 60 * 1000;

/** One live worker process as its heartbeat describes it. */
export interface WorkerHeartbeat {
  id: string;
  host: string;
  pid: number;
  startedAt: string;
  lastSeenAt: string;
}

export interface ServiceStatus {
  workers: WorkerHeartbeat[];
  reconciler: { lastRunAt: string | null; durationMs: number | null };
  failureNotices: { lastSentAt: string | null; sentLast24h: number };
}

/** `<prefix>:worker:<id>`, the heartbeat of one worker (expires after HEARTBEAT_TTL_MS). */
export const workerHeartbeatKey = (prefix: string, id: string) => `${prefix}:worker:${id}`;
/** The ids of workers that announced themselves, so readers need no scan of the keyspace. */
const workersKey = (prefix: string) => `${prefix}:workers`;
const reconcilerKey = (prefix: string) => `${prefix}:reconciler:last-run`;
/** A sorted set of sent notices scored by their time, trimmed to the last 24 hours when one is added. */
const noticesKey = (prefix: string) => `${prefix}:failure-notices:sent`;

/** Renews a worker's heartbeat. */
export async function announceWorker(redis: Redis, prefix: string, heartbeat: WorkerHeartbeat): Promise<void> {
  await redis
    .multi()
    .set(workerHeartbeatKey(prefix, heartbeat.id), JSON.stringify(heartbeat), "PX", HEARTBEAT_TTL_MS)
    .sadd(workersKey(prefix), heartbeat.id)
    .exec();
}

/** Removes a stopping worker's heartbeat at once rather than when it expires. */
export async function withdrawWorker(redis: Redis, prefix: string, id: string): Promise<void> {
  await redis.multi().del(workerHeartbeatKey(prefix, id)).srem(workersKey(prefix), id).exec();
}

/**
 * How long the heartbeats of `ids` last unless renewed, in ms, for those that are there (one round
 * trip; every key has the same hash tag).
 */
export async function workerHeartbeatsLeft(redis: Redis, prefix: string, ids: string[]): Promise<Map<string, number>> {
  const left = new Map<string, number>();
  if (ids.length === 0) return left;
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.pttl(workerHeartbeatKey(prefix, id));
  const answers = (await pipeline.exec()) ?? [];
  ids.forEach((id, index) => {
    const [error, ms] = answers[index] ?? [new Error("Redis gave no answer for a heartbeat")];
    if (error) throw error;
    // -2: no such key; -1 (no expiry) is never written.
    if (typeof ms === "number" && ms >= 0) left.set(id, ms);
  });
  return left;
}

export async function recordReconcilerRun(
  redis: Redis,
  prefix: string,
  run: { at: Date; durationMs: number },
): Promise<void> {
  await redis.set(reconcilerKey(prefix), JSON.stringify({ at: run.at.toISOString(), durationMs: run.durationMs }));
}

/** Records one notice sent (`orgId` keeps notices of the same instant apart). */
export async function recordFailureNoticeSent(redis: Redis, prefix: string, at: Date, orgId: string): Promise<void> {
  const key = noticesKey(prefix);
  await redis
    .multi()
    .zadd(key, at.getTime(), `${at.toISOString()} ${orgId}`)
    // Trimmed as it grows, never expired: the newest notice stays known however old it is.
    .zremrangebyscore(key, "-inf", `(${at.getTime() - NOTICE_WINDOW_MS}`)
    .exec();
}

function parseJson(text: string | null): unknown {
  if (text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The live workers (oldest first), the reconciler's last run and the notices of the last 24 h. */
export async function readServiceStatus(redis: Redis, prefix: string, now: Date): Promise<ServiceStatus> {
  const ids = (await redis.smembers(workersKey(prefix))).sort();
  const beats = ids.length > 0 ? await redis.mget(ids.map((id) => workerHeartbeatKey(prefix, id))) : [];
  const workers: WorkerHeartbeat[] = [];
  const gone: string[] = [];
  for (const [index, id] of ids.entries()) {
    const beat = parseJson(beats[index] ?? null) as WorkerHeartbeat | undefined;
    if (beat) workers.push(beat);
    else gone.push(id);
  }
  // A worker that died without withdrawing leaves its id behind; its heartbeat expired, so forget it.
  if (gone.length > 0) await redis.srem(workersKey(prefix), ...gone);
  workers.sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.id.localeCompare(b.id));

  const since = now.getTime() - NOTICE_WINDOW_MS;
  const [run, sentLast24h, last] = await Promise.all([
    redis.get(reconcilerKey(prefix)),
    redis.zcount(noticesKey(prefix), since, "+inf"),
    redis.zrange(noticesKey(prefix), 0, 0, "REV", "WITHSCORES"),
  ]);
  const reconciler = parseJson(run) as { at?: string; durationMs?: number } | undefined;
  const lastScore = last[1];
  return {
    workers,
    reconciler: { lastRunAt: reconciler?.at ?? null, durationMs: reconciler?.durationMs ?? null },
    failureNotices: {
      lastSentAt: lastScore === undefined ? null : new Date(Number(lastScore)).toISOString(),
      sentLast24h,
    },
  };
}
