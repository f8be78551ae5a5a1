import type { Config } from "@punctual/core";
import type { Db } from "@punctual/db";
import { BUCKET_MS } from "./schemas.ts";
import { type BucketFigures, type BucketSource, computeBuckets, emptyBucket, type StatsWindow } from "./stats-query.ts";

// Hour buckets that can no longer change, kept in the API process so that a request computes only
// the hours it has not seen and the ones still open. The console's overview asks for the last 24
// hours every time it is shown: without this each request would read the whole window again.
//
// An hour is settled once nothing recorded later can fall in it: every attempt is recorded with its
// start time, at most DELIVERY_TIMEOUT_MS later (plus the time to write it), and a failed attempt
// counts as retried only once its next attempt exists, at most the longest RETRY_DELAYS_MS later.
// A settled hour is kept as it was computed, also after retention deleted its rows.

const HOUR_MS = BUCKET_MS.hour;
/** Beyond the delivery timeout and the longest retry delay, for recording and clocks. */
const SETTLE_SLACK_MS = 5 * 60 * 1000;
/** Organizations kept, least recently asked for dropped first; each keeps at most a window of hours. */
const MAX_ORGANIZATIONS = 1_000;
const MAX_HOURS_PER_ORGANIZATION = 31 * 24 + 2;

/** How long after its end an hour can still change. */
export const settleMs = (config: Pick<Config, "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS">) =>
  config.DELIVERY_TIMEOUT_MS + Math.max(0, ...config.RETRY_DELAYS_MS) + SETTLE_SLACK_MS;

/**
 * A source of bucket figures (for `loadStats`) that keeps settled hours. Day buckets are always
 * computed: their percentiles cannot be made of the hours'.
 */
export function createStatsCache(options: { settleMs: number; now: () => Date }): BucketSource {
  const kept = new Map<string, Map<number, BucketFigures>>();

  function hoursOf(orgId: string): Map<number, BucketFigures> {
    let hours = kept.get(orgId);
    if (hours) {
      // Least recently used last out: re-inserting moves it to the end.
      kept.delete(orgId);
    } else {
      hours = new Map();
      if (kept.size >= MAX_ORGANIZATIONS) {
        const oldest = kept.keys().next().value;
        if (oldest !== undefined) kept.delete(oldest);
      }
    }
    kept.set(orgId, hours);
    return hours;
  }

  function keep(hours: Map<number, BucketFigures>, start: number, figures: BucketFigures) {
    hours.set(start, figures);
    if (hours.size <= MAX_HOURS_PER_ORGANIZATION) return;
    const oldest = [...hours.keys()].sort((a, b) => a - b).slice(0, hours.size - MAX_HOURS_PER_ORGANIZATION);
    for (const hour of oldest) hours.delete(hour);
  }

  return async (db: Db, orgId: string, window: StatsWindow) => {
    if (window.bucket !== "hour") return computeBuckets(db, orgId, window);
    const from = window.from.getTime();
    const to = window.to.getTime();
    // The hours wholly inside the window that have settled: one run [first, end).
    const first = Math.ceil(from / HOUR_MS) * HOUR_MS;
    const end = Math.min(
      Math.floor(to / HOUR_MS) * HOUR_MS,
      Math.floor((options.now().getTime() - options.settleMs) / HOUR_MS) * HOUR_MS,
    );
    if (first >= end) return computeBuckets(db, orgId, window);

    const hours = hoursOf(orgId);
    const missing: number[] = [];
    for (let start = first; start < end; start += HOUR_MS) if (!hours.has(start)) missing.push(start);
    const range = (a: number, b: number): StatsWindow => ({ from: new Date(a), to: new Date(b), bucket: "hour" });
    const [head, tail, computed] = await Promise.all([
      from < first ? computeBuckets(db, orgId, range(from, first)) : undefined,
      end < to ? computeBuckets(db, orgId, range(end, to)) : undefined,
      missing.length > 0
        ? computeBuckets(db, orgId, range(missing[0] as number, (missing.at(-1) as number) + HOUR_MS))
        : undefined,
    ]);
    if (computed) {
      // Every hour of the computed range, the empty ones too: they are settled as well.
      for (let start = missing[0] as number; start <= (missing.at(-1) as number); start += HOUR_MS) {
        keep(hours, start, computed.get(start) ?? emptyBucket());
      }
    }
    const figures = new Map<number, BucketFigures>([...(head ?? []), ...(tail ?? [])]);
    for (let start = first; start < end; start += HOUR_MS) {
      const hour = hours.get(start);
      if (hour) figures.set(start, hour);
    }
    return figures;
  };
}
