import { describe, expect, it } from "vitest";
import type { CronJobTiming } from "./cron-jobs.ts";
import { EVERY_INVALID, EVERY_TOO_SHORT } from "./schedule.ts";
import {
  applyTimingEdit,
  checkEvery,
  END_AT_NOT_AFTER_START_AT,
  END_AT_PAST,
  EVERY_TOO_LONG,
  EXPRESSION_OR_EVERY,
  firingTimesDiffer,
  givesBothExpressionAndEvery,
  hasTimingEdit,
  NEVER_FIRES_BEFORE_END_AT,
  timingProblem,
} from "./schedule-rules.ts";

const NOW = new Date("2027-03-24T12:00:00.000Z");
const hour = { text: "PT1H", ms: 3_600_000 };
const timing = (fields: Partial<CronJobTiming> = {}): CronJobTiming => ({
  expression: "0 * * * *",
  timezone: "UTC",
  every: null,
  startAt: null,
  endAt: null,
  maxRuns: null,
  catchUp: "skip",
  catchUpWindowMs: 3_600_000,
  overlap: "allow",
  jitterMs: 0,
  ...fields,
});

describe("checkEvery", () => {
  it("keeps the text as given with its length", () => {
    expect(checkEvery("PT90S")).toEqual({ ok: true, value: { text: "PT90S", ms: 90_000 } });
    expect(checkEvery("P365D")).toEqual({ ok: true, value: { text: "P365D", ms: 365 * 86_400_000 } });
  });

  it("refuses what is not an interval of 1 s to 365 days", () => {
    expect(checkEvery(60)).toEqual({ ok: false, message: EVERY_INVALID });
    expect(checkEvery(null)).toEqual({ ok: false, message: EVERY_INVALID });
    expect(checkEvery("P1M")).toEqual({ ok: false, message: EVERY_INVALID });
    expect(checkEvery("PT0.999S")).toEqual({ ok: false, message: EVERY_TOO_SHORT });
    expect(checkEvery("P53W")).toEqual({ ok: false, message: EVERY_TOO_LONG });
  });
});

describe("applyTimingEdit", () => {
  it("switches an expression for an interval and back, null clearing either", () => {
    expect(applyTimingEdit(timing(), { every: hour })).toMatchObject({ expression: null, every: hour });
    const interval = timing({ expression: null, every: hour });
    expect(applyTimingEdit(interval, { expression: "0 6 * * *" })).toMatchObject({
      expression: "0 6 * * *",
      every: null,
    });
    expect(applyTimingEdit(interval, { expression: null })).toMatchObject({ expression: null, every: hour });
    expect(applyTimingEdit(interval, { every: null })).toMatchObject({ expression: null, every: null });
  });

  it("replaces the fields given, clears those given null, keeps the rest", () => {
    const before = timing({ startAt: NOW, endAt: new Date("2027-04-01T00:00:00Z"), maxRuns: 3, jitterMs: 500 });
    expect(applyTimingEdit(before, { endAt: null, maxRuns: 7, overlap: "buffer" })).toEqual({
      ...before,
      endAt: null,
      maxRuns: 7,
      overlap: "buffer",
    });
    expect(applyTimingEdit(before, {})).toEqual(before);
  });

  it("tells an edit with timing fields, and one giving both an expression and an interval", () => {
    expect(hasTimingEdit({})).toBe(false);
    expect(hasTimingEdit({ startAt: null })).toBe(true);
    expect(givesBothExpressionAndEvery({ expression: "* * * * *", every: hour })).toBe(true);
    expect(givesBothExpressionAndEvery({ expression: null, every: hour })).toBe(false);
  });
});

describe("firingTimesDiffer", () => {
  it("counts the expression, the interval, an expression's zone and the window, not the policies", () => {
    const base = timing({ startAt: NOW });
    expect(firingTimesDiffer(base, { ...base, startAt: new Date(NOW) })).toBe(false);
    expect(firingTimesDiffer(base, { ...base, maxRuns: 2, jitterMs: 10, catchUp: "all", overlap: "skip" })).toBe(false);
    expect(firingTimesDiffer(base, { ...base, timezone: "Europe/Paris" })).toBe(true);
    // An interval counts milliseconds: its zone changes none of its firings.
    const interval = timing({ expression: null, every: hour });
    expect(firingTimesDiffer(interval, { ...interval, timezone: "Europe/Paris" })).toBe(false);
    expect(firingTimesDiffer(base, { ...base, endAt: new Date("2028-01-01T00:00:00Z") })).toBe(true);
    expect(firingTimesDiffer(base, { ...base, expression: null, every: hour })).toBe(true);
  });
});

describe("timingProblem", () => {
  const at = (iso: string) => new Date(iso);

  it("accepts a timing that fires, the window's ends included", () => {
    expect(timingProblem(timing(), NOW, NOW)).toBeUndefined();
    // The one firing is endAt itself.
    expect(timingProblem(timing({ endAt: at("2027-03-24T13:00:00Z") }), NOW, NOW)).toBeUndefined();
    const interval = timing({ expression: null, every: hour });
    expect(timingProblem({ ...interval, endAt: at("2027-03-24T13:00:00Z") }, NOW, NOW)).toBeUndefined();
  });

  it("refuses contradictions, and says which timings never fire", () => {
    expect(timingProblem(timing({ every: hour }), NOW, NOW)).toEqual({ kind: "refused", message: EXPRESSION_OR_EVERY });
    expect(timingProblem(timing({ expression: null }), NOW, NOW)).toEqual({
      kind: "refused",
      message: EXPRESSION_OR_EVERY,
    });
    expect(timingProblem(timing({ startAt: NOW, endAt: NOW }), NOW, NOW)).toEqual({
      kind: "refused",
      message: END_AT_NOT_AFTER_START_AT,
    });
    expect(timingProblem(timing({ endAt: NOW }), NOW, NOW)).toEqual({ kind: "neverFires", message: END_AT_PAST });
    const interval = timing({ expression: null, every: hour, endAt: at("2027-03-24T12:59:59.999Z") });
    expect(timingProblem(interval, NOW, NOW)).toEqual({ kind: "neverFires", message: NEVER_FIRES_BEFORE_END_AT });
    // Set half an hour ago, the interval first fires at 12:30, before endAt.
    expect(timingProblem(interval, NOW, at("2027-03-24T11:30:00Z"))).toBeUndefined();
  });
});
