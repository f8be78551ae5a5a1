import { describe, expect, it } from "vitest";
import {
  CRON_LEAD_MS,
  cronRepeatStrategy,
  EVERY_INVALID,
  EVERY_TOO_SHORT,
  firingOfSchedulerJob,
  firingsBetween,
  jitterOf,
  leadOfRepeatOptions,
  nextFiring,
  nextFirings,
  parseEvery,
  repeatOptionsOf,
  type Schedule,
  scheduleOf,
  scheduleOfRepeatOptions,
} from "./schedule.ts";

const at = (iso: string) => Date.parse(iso);
const interval = (everyMs: number, firstAt: number, window: Partial<Schedule> = {}): Schedule => ({
  expression: null,
  timezone: "UTC",
  everyMs,
  firstAt,
  startAt: null,
  endAt: null,
  ...window,
});
const cron = (expression: string, window: Partial<Schedule> = {}): Schedule => ({
  expression,
  timezone: "UTC",
  everyMs: null,
  firstAt: null,
  startAt: null,
  endAt: null,
  ...window,
});

describe("parseEvery", () => {
  it.each([
    ["PT30S", 30_000],
    ["PT5M", 300_000],
    ["P1D", 86_400_000],
    ["P1W", 604_800_000],
    ["PT1.5S", 1_500],
    ["P1DT2H", 93_600_000],
  ])("reads %s as %i ms", (text, ms) => {
    expect(parseEvery(text)).toEqual({ ms });
  });

  it.each(["30s", "P1M", "P1Y", "PT", "", "PT0S", "every minute"])("refuses %j with the sentence", (text) => {
    expect(parseEvery(text)).toEqual({ problem: EVERY_INVALID });
  });

  it("refuses an interval under a second", () => {
    expect(parseEvery("PT0.5S")).toEqual({ problem: EVERY_TOO_SHORT });
  });
});

describe("nextFiring", () => {
  it("fires an interval at its first firing, then every interval, strictly after the instant asked", () => {
    const schedule = interval(2_000, at("2026-01-01T00:00:00Z"));
    expect(nextFiring(schedule, at("2025-12-31T00:00:00Z"))).toBe(at("2026-01-01T00:00:00Z"));
    expect(nextFiring(schedule, at("2026-01-01T00:00:00Z"))).toBe(at("2026-01-01T00:00:02Z"));
    expect(nextFiring(schedule, at("2026-01-01T00:00:03.5Z"))).toBe(at("2026-01-01T00:00:04Z"));
  });

  it("fires six fields on their seconds", () => {
    expect(nextFirings(cron("*/15 * * * * *"), at("2026-01-01T00:00:01Z"), 3)).toEqual([
      at("2026-01-01T00:00:15Z"),
      at("2026-01-01T00:00:30Z"),
      at("2026-01-01T00:00:45Z"),
    ]);
  });

  it("fires only inside [startAt, endAt]", () => {
    const schedule = cron("0 * * * *", { startAt: at("2026-01-01T05:00:00Z"), endAt: at("2026-01-01T07:00:00Z") });
    expect(nextFirings(schedule, at("2026-01-01T00:00:00Z"), 10)).toEqual([
      at("2026-01-01T05:00:00Z"),
      at("2026-01-01T06:00:00Z"),
      at("2026-01-01T07:00:00Z"),
    ]);
  });

  it("lists the firings between two instants, at most a limit", () => {
    const schedule = interval(1_000, at("2026-01-01T00:00:00Z"));
    expect(firingsBetween(schedule, at("2026-01-01T00:00:00Z"), at("2026-01-01T00:00:03Z"), 10)).toHaveLength(3);
    expect(firingsBetween(schedule, at("2026-01-01T00:00:00Z"), at("2026-01-01T00:01:00Z"), 5)).toHaveLength(5);
  });
});

describe("scheduleOf", () => {
  it("starts an interval one interval after the schedule was set, or at startAt", () => {
    const since = new Date("2026-01-01T00:00:00Z");
    const fields = { expression: null, timezone: "UTC", everyMs: 30_000, endAt: null, scheduleSince: since };
    expect(scheduleOf({ ...fields, startAt: null }).firstAt).toBe(at("2026-01-01T00:00:30Z"));
    expect(scheduleOf({ ...fields, startAt: new Date("2026-02-01T00:00:00Z") }).firstAt).toBe(
      at("2026-02-01T00:00:00Z"),
    );
  });
});

describe("jitterOf", () => {
  it("stays within 0 to jitterMs, is the same for the same run, and varies between runs", () => {
    const values = Array.from({ length: 200 }, (_, n) => jitterOf("cron_x", 1_000_000 + n * 1_000, 5_000));
    expect(values.every((value) => value >= 0 && value <= 5_000)).toBe(true);
    expect(jitterOf("cron_x", 1_000_000, 5_000)).toBe(values[0]);
    expect(new Set(values).size).toBeGreaterThan(150);
    expect(jitterOf("cron_x", 1_000_000, 0)).toBe(0);
  });
});

describe("the job scheduler's repeat options", () => {
  it("hold the schedule, and BullMQ's strategy makes each firing's job a lead before it", async () => {
    const schedules = [
      interval(30_000, at("2026-01-01T00:00:10Z"), { endAt: at("2026-01-02T00:00:00Z") }),
      cron("30 */5 * * * *", { startAt: at("2026-03-01T00:00:00Z") }),
      { ...cron("0 9 * * MON"), timezone: "Europe/Paris" },
    ];
    for (const schedule of schedules) {
      const options = repeatOptionsOf(schedule);
      expect(scheduleOfRepeatOptions(options)).toEqual(schedule);
      expect(leadOfRepeatOptions(options)).toBe(CRON_LEAD_MS);
      // BullMQ asks from the job just taken (due a lead before its firing): the next is the firing after it.
      const firing = nextFiring(schedule, at("2026-01-01T00:00:00Z")) as number;
      const next = nextFiring(schedule, firing) as number;
      expect(await cronRepeatStrategy(firing - CRON_LEAD_MS, options)).toBe(next - CRON_LEAD_MS);
      expect(firingOfSchedulerJob(next - CRON_LEAD_MS, options)).toBe(next);
    }
  });

  it("of a scheduler made before the lead fire at the firing itself", async () => {
    const schedule = cron("0 9 * * MON");
    const options = { pattern: "0 9 * * MON", tz: "UTC" };
    expect(scheduleOfRepeatOptions(options)).toEqual(schedule);
    const after = at("2026-01-01T00:00:00Z");
    expect(await cronRepeatStrategy(after, options)).toBe(nextFiring(schedule, after));
    expect(firingOfSchedulerJob(1_000, options)).toBe(1_000);
  });
});
