import { Queue } from "bullmq";
import type { Config } from "./config.ts";
import { hashTagOf } from "./config.ts";
import { type EventJobData, QUEUE_NAMES } from "./queues.ts";
import type { Redis } from "./redis.ts";

// Sharded event queues (QUEUE_SHARDS). On Redis Cluster a queue lives in one hash slot, so one
// master: N event queues under N hash tags spread the events' jobs, and their work, over the
// masters. An event's shard follows from its id alone, so every process finds its job without
// asking anyone. Cron, maintenance and every other key stay under QUEUE_PREFIX itself.

/** Redis Cluster's slot count. */
const SLOTS = 16_384;

/** CRC16-XMODEM (polynomial 0x1021), the checksum Redis Cluster hashes keys with. */
function crc16(text: string): number {
  let crc = 0;
  for (const byte of Buffer.from(text, "utf8")) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The cluster slot of a key: its hash tag's, when it has one. */
export function keySlot(key: string): number {
  return crc16(hashTagOf(key) ?? key) % SLOTS;
}

/**
 * The hash tag of shard `index` of `count`: `<tag>-<index>`, or `<tag>-<index>-<n>` with the
 * smallest n that puts it in the index-th of `count` equal ranges of slots. A cluster whose masters
 * share the slots evenly (as `redis-cli --cluster create` and rebalancing leave them) then has the
 * shards spread over its masters as evenly as their numbers allow, instead of where the hash falls.
 */
function shardTag(tag: string, index: number, count: number): string {
  for (let n = 0; ; n++) {
    const candidate = n === 0 ? `${tag}-${index}` : `${tag}-${index}-${n}`;
    if (Math.floor((crc16(candidate) % SLOTS) * (count / SLOTS)) === index) return candidate;
  }
}

/**
 * The BullMQ prefix of each event queue, by shard. One shard (the default): QUEUE_PREFIX itself,
 * the keys of a single queue as always. N shards: QUEUE_PREFIX with its hash tag `{t}` replaced by
 * shard i's (see shardTag), e.g. `{punctual}` → `{punctual-0}`, `{punctual-1-2}`, …; without a hash
 * tag (one Redis), `<prefix>-<i>`.
 */
export function eventQueuePrefixes(config: Pick<Config, "QUEUE_PREFIX" | "QUEUE_SHARDS">): string[] {
  const prefix = config.QUEUE_PREFIX;
  const count = config.QUEUE_SHARDS;
  if (count === 1) return [prefix];
  const tag = hashTagOf(prefix);
  return Array.from({ length: count }, (_, index) =>
    tag === undefined ? `${prefix}-${index}` : prefix.replace(`{${tag}}`, `{${shardTag(tag, index, count)}}`),
  );
}

/** The shard of an event: a stable hash (FNV-1a) of its id, so every process agrees on it. */
export function eventShardOf(eventId: string, count: number): number {
  if (count === 1) return 0;
  let hash = 0x811c9dc5;
  for (let index = 0; index < eventId.length; index++) {
    hash ^= eventId.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % count;
}

/** The shards a worker process consumes: WORKER_SHARDS, or every shard when it is unset. */
export function consumedShards(config: Pick<Config, "QUEUE_SHARDS" | "WORKER_SHARDS">): number[] {
  return config.WORKER_SHARDS ?? Array.from({ length: config.QUEUE_SHARDS }, (_, index) => index);
}

/**
 * One BullMQ queue per event shard, in shard order (index = shard), on `connection`: what a producer
 * (the API, the reconciler) adds to, and what the dashboards count.
 */
export function createEventQueues(
  connection: Redis,
  config: Pick<Config, "QUEUE_PREFIX" | "QUEUE_SHARDS">,
): Queue<EventJobData>[] {
  return eventQueuePrefixes(config).map(
    (prefix) => new Queue<EventJobData>(QUEUE_NAMES.events, { connection, prefix }),
  );
}

/** How a shard's queue is named where queues are listed: `events` alone, or `events-<shard>`. */
export const eventQueueLabel = (shard: number, count: number) =>
  count === 1 ? QUEUE_NAMES.events : `${QUEUE_NAMES.events}-${shard}`;
