import type { Flow } from "../../api/types.ts";
import { formatCount } from "../../format.ts";

// How a flow's limits are said on a page (contract §10.2): "5 per second", "100 per minute",
// "at most 2 at once", both joined, or "no limit".

/** Units a period is said in, largest first: a period is said in the largest one it is a whole number of. */
export const PERIOD_UNITS = [
  { ms: 86_400_000, one: "day", many: "days" },
  { ms: 3_600_000, one: "hour", many: "hours" },
  { ms: 60_000, one: "minute", many: "minutes" },
  { ms: 1_000, one: "second", many: "seconds" },
] as const;

/** `1,000` is "second", `120,000` "2 minutes", `1,500` "1,500 ms". */
export function describePeriod(periodMs: number): string {
  for (const unit of PERIOD_UNITS) {
    if (periodMs >= unit.ms && periodMs % unit.ms === 0) {
      const count = periodMs / unit.ms;
      return count === 1 ? unit.one : `${formatCount(count)} ${unit.many}`;
    }
  }
  return `${formatCount(periodMs)} ms`;
}

/** "5 per second", "100 per minute", "10 per 2 hours". */
export function describeRate(rate: number, periodMs: number): string {
  return `${formatCount(rate)} per ${describePeriod(periodMs)}`;
}

/** "at most 2 at once". */
export function describeParallelism(parallelism: number): string {
  return `at most ${formatCount(parallelism)} at once`;
}

/** A flow's limits in one sentence: its rate, its parallelism, both, or "no limit". */
export function describeLimits(flow: Pick<Flow, "rate" | "periodMs" | "parallelism">): string {
  const parts: string[] = [];
  if (flow.rate !== null) parts.push(describeRate(flow.rate, flow.periodMs));
  if (flow.parallelism !== null) parts.push(describeParallelism(flow.parallelism));
  return parts.length === 0 ? "no limit" : parts.join(", ");
}

/** A flow's state as its badge says it. */
export const flowState = (flow: Pick<Flow, "paused">) => (flow.paused ? "Paused" : "Running");
