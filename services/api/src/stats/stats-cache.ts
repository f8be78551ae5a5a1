import type { Config } from "@punctual/core";
import type { Db } from "@punctual/db";
import { BUCKET_MS, type StatsBucket } from "./schemas.ts";
import { type BucketFigures, type BucketSource, computeBuckets, emptyBucket, type StatsWindow } from "./stats-query.ts";

// Buckets (hours or days) that can no longer change, kept in the API process so that a request
// computes only the buckets it has not seen and the ones still open. The console's overview asks
// for the last 24 hours every time it is shown: without this each request would read the whole
// window again.
//
// A bucket is settled once nothing recorded later can fall in it: every attempt is recorded with
// its start time, at most DELIVERY_TIMEOUT_MS later (plus the time to write it), and a failed
// attempt counts as retried only once its next attempt exists, at most the longest RETRY_DELAYS_MS
// later. A settled bucket is kept as it was computed, also after retention deleted its rows.

/** Beyond the delivery timeout and the longest retry delay, for recording and clocks. */
const SETTLE_SLACK_MS = 5 * 60 * 1000;
/** Organizations (per bucket size) kept, least recently asked for dropped first. */
const MAX_ORGANIZATIONS = 1_000;
/** Buckets kept per organization and size: the longest window's. */
const MAX_BUCKETS: Record<StatsBucket, number> = { hour: 31 * 24 + 2, day: 33 };

/** How long after its end a bucket can still change. */
export const settleMs = (config: Pick<Config, "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS">) =>
  config.DELIVERY_TIMEOUT_MS + Math.max(0, ...config.RETRY_DELAYS_MS) + SETTLE_SLACK_MS;

/**
 * A source of bucket figures (for `loadStats`) that keeps settled buckets, hours and days apart (a
 * day's percentiles cannot be made of its hours').
 */
export function createStatsCache(options: { settleMs: number; now: () => Date }): BucketSource {
  /** By bucket size and organization, least recently asked for first. */
  const kept = new Map<string, Map<number, BucketFigures>>();

  function bucketsOf(orgId: string, bucket: StatsBucket): Map<number, BucketFigures> {
    const key = `${bucket} ${orgId}`;
    let buckets = kept.get(key);
    if (buckets) {
      // Least recently used first out: re-inserting moves it to the end.
      kept.delete(key);
    } else {
      buckets = new Map();
      if (kept.size >= MAX_ORGANIZATIONS) {
        const oldest = kept.keys().next().value;
        if (oldest !== undefined) kept.delete(oldest);
      }
    }
    kept.set(key, buckets);
    return buckets;
  }

  function keep(buckets: Map<number, BucketFigures>, bucket: StatsBucket, start: number, figures: BucketFigures) {
    buckets.set(start, figures);
    const over = buckets.size - MAX_BUCKETS[bucket];
    if (over <= 0) return;
    for (const oldest of [...buckets.keys()].sort((a, b) => a - b).slice(0, over)) buckets.delete(oldest);
  }

  return async (db: Db, orgId: string, window: StatsWindow) => {
    const size = BUCKET_MS[window.bucket];
    const from = window.from.getTime();
    const to = window.to.getTime();
    // The buckets wholly inside the window that have settled: one run [first, end). Buckets start
    // on UTC hours and midnights, which are multiples of their size since 1970.
    const first = Math.ceil(from / size) * size;
    const end = Math.min(
      Math.floor(to / size) * size,
      Math.floor((options.now().getTime() - options.settleMs) / size) * size,
    );
    if (first >= end) return computeBuckets(db, orgId, window);

    const settled = bucketsOf(orgId, window.bucket);
    const missing: number[] = [];
    for (let start = first; start < end; start += size) if (!settled.has(start)) missing.push(start);
    const range = (a: number, b: number): StatsWindow => ({
      from: new Date(a),
      to: new Date(b),
      bucket: window.bucket,
    });
    const [head, tail, computed] = await Promise.all([
      from < first ? computeBuckets(db, orgId, range(from, first)) : undefined,
      end < to ? computeBuckets(db, orgId, range(end, to)) : undefined,
      missing.length > 0
        ? computeBuckets(db, orgId, range(missing[0] as number, (missing.at(-1) as number) + size))
        : undefined,
    ]);
    if (computed) {
      // Every bucket of the computed range, the empty ones too: they are settled as well.
      for (let start = missing[0] as number; start <= (missing.at(-1) as number); start += size) {
        keep(settled, window.bucket, start, computed.get(start) ?? emptyBucket());
      }
    }
    const figures = new Map<number, BucketFigures>([...(head ?? []), ...(tail ?? [])]);
    for (let start = first; start < end; start += size) {
      const figure = settled.get(start);
      if (figure) figures.set(start, figure);
    }
    return figures;
  };
}
