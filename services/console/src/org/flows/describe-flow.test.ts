import { describe, expect, it } from "vitest";
import { describeLimits, describePeriod, flowState } from "./describe-flow.ts";

const limits = (rate: number | null, periodMs: number, parallelism: number | null) =>
  describeLimits({ rate, periodMs, parallelism });

describe("a flow's limits in words", () => {
  it("say a rate per its period, in the largest unit the period is a whole number of", () => {
    expect(limits(5, 1_000, null)).toBe("5 per second");
    expect(limits(100, 60_000, null)).toBe("100 per minute");
    expect(limits(10, 3_600_000, null)).toBe("10 per hour");
    expect(limits(1, 86_400_000, null)).toBe("1 per day");
    expect(limits(10, 120_000, null)).toBe("10 per 2 minutes");
    expect(limits(3, 90_000, null)).toBe("3 per 90 seconds");
  });

  it("say a period that is no whole number of seconds in milliseconds", () => {
    expect(describePeriod(1_500)).toBe(`${(1500).toLocaleString()} ms`);
  });

  it("say parallelism, both limits, or none", () => {
    expect(limits(null, 1_000, 2)).toBe("at most 2 at once");
    expect(limits(5, 1_000, 2)).toBe("5 per second, at most 2 at once");
    expect(limits(null, 60_000, null)).toBe("no limit");
  });

  it("give the state a flow's badge shows", () => {
    expect(flowState({ paused: true })).toBe("Paused");
    expect(flowState({ paused: false })).toBe("Running");
  });
});
