import type { CatchUpPolicy, CronJob, OverlapPolicy } from "../../api/types.ts";
import { formatCount, formatTime } from "../../format.ts";

// How a cron job's timing is said on a page (contract §10.4): "every 30 s", "from … until …",
// "at most 3 runs", "catch-up: latest", "overlap: skip", "jitter up to 30 s".

/** What the API takes when `catchUpWindowMs` is left out (contract §10.4). */
export const DEFAULT_CATCH_UP_WINDOW_MS = 3_600_000;

const SPAN_PARTS: readonly { ms: number; unit: string; one: string }[] = [
  { ms: 86_400_000, unit: "d", one: "day" },
  { ms: 3_600_000, unit: "h", one: "hour" },
  { ms: 60_000, unit: "min", one: "minute" },
  { ms: 1_000, unit: "s", one: "second" },
  { ms: 1, unit: "ms", one: "millisecond" },
];

/** A span exactly, in its units from days down: `30 s`, `1 h 30 min`, `1 s 500 ms`, `0 s`. */
export function spanWords(ms: number): string {
  if (ms <= 0) return "0 s";
  const parts: string[] = [];
  let rest = Math.round(ms);
  for (const { ms: size, unit } of SPAN_PARTS) {
    const count = Math.floor(rest / size);
    if (count > 0) parts.push(`${formatCount(count)} ${unit}`);
    rest -= count * size;
  }
  return parts.join(" ");
}

const ISO_DURATION = /^P(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:[.,]\d+)?)S)?)?$/;

/**
 * The length of an ISO 8601 duration of weeks, days, hours, minutes and seconds (a day is 24 h, as
 * the API counts it), or undefined for anything else: the API is the one to say what is wrong.
 */
export function durationMs(iso: string): number | undefined {
  const match = ISO_DURATION.exec(iso.trim().toUpperCase());
  if (!match) return undefined;
  const [, weeks, days, hours, minutes, seconds] = match;
  const number = (text: string | undefined) => (text ? Number(text.replace(",", ".")) : 0);
  const ms =
    number(weeks) * 604_800_000 +
    number(days) * 86_400_000 +
    number(hours) * 3_600_000 +
    number(minutes) * 60_000 +
    number(seconds) * 1_000;
  return ms > 0 ? Math.round(ms) : undefined;
}

/** An interval as a person says it: `every 30 s`, `every 5 min`, `every day`, `every 1 h 30 min`; as given when unreadable. */
export function describeEvery(every: string): string {
  const ms = durationMs(every);
  if (ms === undefined) return `every ${every}`;
  if (ms === 604_800_000) return "every week";
  const single = SPAN_PARTS.find((part) => part.ms === ms);
  return single && single.ms >= 1_000 ? `every ${single.one}` : `every ${spanWords(ms)}`;
}

/** The window its runs happen in: `from … until …`, `from …`, `until …`, or undefined without one. */
export function describeWindow(
  startAt: string | null | undefined,
  endAt: string | null | undefined,
  format: (iso: string) => string = formatTime,
): string | undefined {
  if (startAt && endAt) return `from ${format(startAt)} until ${format(endAt)}`;
  if (startAt) return `from ${format(startAt)}`;
  if (endAt) return `until ${format(endAt)}`;
  return undefined;
}

/** `at most 3 runs`, `at most 1 run`, or undefined without a limit. */
export function describeMaxRuns(maxRuns: number | null | undefined): string | undefined {
  if (maxRuns === null || maxRuns === undefined) return undefined;
  return `at most ${formatCount(maxRuns)} ${maxRuns === 1 ? "run" : "runs"}`;
}

/** `catch-up: latest`; `all` says its window: `catch-up: all within 1 h`. */
export function describeCatchUp(catchUp: CatchUpPolicy, windowMs: number = DEFAULT_CATCH_UP_WINDOW_MS): string {
  return catchUp === "all" ? `catch-up: all within ${spanWords(windowMs)}` : `catch-up: ${catchUp}`;
}

/** What each catch-up policy does with the firings missed while no worker ran. */
export const CATCH_UP_MEANINGS: { [Policy in CatchUpPolicy]: string } = {
  skip: "firings missed while no worker ran are not delivered",
  latest: "of the firings missed while no worker ran, the most recent is delivered once",
  all: "each firing missed while no worker ran, within the window, is delivered, at most 100",
};

/** `overlap: skip`. */
export const describeOverlap = (overlap: OverlapPolicy) => `overlap: ${overlap}`;

/** What each overlap policy does with a firing while the previous run is still undecided. */
export const OVERLAP_MEANINGS: { [Policy in OverlapPolicy]: string } = {
  allow: "each firing is a run of its own, even while the previous run is undecided",
  skip: "a firing while the previous run is undecided is recorded as Skipped and not sent",
  buffer: "a firing while the previous run is undecided waits (one at most) and is sent when that run ends",
};

/** `jitter up to 30 s`, or `no jitter`. */
export const describeJitter = (jitterMs: number) =>
  jitterMs > 0 ? `jitter up to ${spanWords(jitterMs)}` : "no jitter";

/** When it fires: its expression, or its interval in words. */
export function describeFiring(job: Pick<CronJob, "expression" | "every">): string {
  if (job.every) return describeEvery(job.every);
  return job.expression ?? "—";
}

type Timing = Pick<
  CronJob,
  "expression" | "every" | "startAt" | "endAt" | "maxRuns" | "catchUp" | "catchUpWindowMs" | "overlap" | "jitterMs"
>;

/** What the timing says besides when it fires, defaults left unsaid: its window, run limit, catch-up, overlap, jitter. */
export function timingExtras(job: Timing, format: (iso: string) => string = formatTime): string[] {
  const parts: string[] = [];
  const window = describeWindow(job.startAt, job.endAt, format);
  if (window) parts.push(window);
  const limit = describeMaxRuns(job.maxRuns);
  if (limit) parts.push(limit);
  if (job.catchUp !== "skip") parts.push(describeCatchUp(job.catchUp, job.catchUpWindowMs));
  if (job.overlap !== "allow") parts.push(describeOverlap(job.overlap));
  if (job.jitterMs > 0) parts.push(describeJitter(job.jitterMs));
  return parts;
}

/**
 * The whole timing in one line, defaults left unsaid: `every 30 s, from … until …, at most 3 runs,
 * catch-up: latest, overlap: skip, jitter up to 30 s`.
 */
export function describeTiming(job: Timing, format: (iso: string) => string = formatTime): string {
  return [describeFiring(job), ...timingExtras(job, format)].join(", ");
}
