import { describe, expect, it } from "vitest";
import { tickLabels, tickStep, timeRange, timeTicks } from "./time-axis.ts";

const at = (iso: string) => Date.parse(iso) / 1000;

describe("time axis", () => {
  it("spans the data's own range, padded, and gives a single point a few minutes around it", () => {
    const from = at("2026-11-01T00:00:00Z");
    const to = at("2026-11-27T00:00:00Z");
    const [low, high] = timeRange(from, to);
    expect(low).toBeLessThan(from);
    expect(high).toBeGreaterThan(to);
    expect(high - low).toBeLessThan((to - from) * 1.2);
    expect(timeRange(from, from)).toEqual([from - 30, from + 30]);
  });

  it("steps by days over weeks and by seconds over a minute, never by more ticks than asked", () => {
    expect(tickStep(at("2026-11-01T00:00:00Z"), at("2026-11-27T00:00:00Z"), 6)).toBe(7 * 86_400);
    expect(tickStep(at("2026-11-27T10:00:00Z"), at("2026-11-27T10:01:00Z"), 6)).toBe(10);
    expect(tickStep(at("2026-11-27T00:00:00Z"), at("2026-11-27T12:00:00Z"), 6)).toBe(2 * 3_600);
    const ticks = timeTicks(at("2026-11-01T00:00:00Z"), at("2026-11-27T00:00:00Z"), 6);
    expect(ticks.length).toBeGreaterThan(1);
    expect(ticks.length).toBeLessThanOrEqual(6);
  });

  it("puts ticks on round times and labels them as precisely as their step", () => {
    const ticks = timeTicks(at("2026-11-27T10:00:07Z"), at("2026-11-27T10:00:52Z"), 6);
    expect(ticks).toEqual([10, 20, 30, 40, 50].map((second) => at(`2026-11-27T10:00:${second}Z`)));
    expect(tickLabels(ticks, 10, 45).every((label) => /\d\d.\d\d.\d\d/.test(label))).toBe(true);
    // Days over a month: a date, no clock.
    const days = timeTicks(at("2026-11-01T00:00:00Z"), at("2026-11-27T00:00:00Z"), 6);
    expect(tickLabels(days, 7 * 86_400, 26 * 86_400).some((label) => /\d\d:\d\d/.test(label))).toBe(false);
  });
});
