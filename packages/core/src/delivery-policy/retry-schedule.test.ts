import { describe, expect, it } from "vitest";
import type { ResolvedExponentialRetry, ResolvedFixedRetry } from "./policy.ts";
import {
  maxAgeDeadline,
  nextRetryDelay,
  parseHttpDate,
  parseRetryAfter,
  planRetry,
  retryAfterDelay,
  startsTooLate,
  stopsOnStatus,
  withRetryAfter,
} from "./retry-schedule.ts";

const fixed = (delaysMs: number[], extra: Partial<ResolvedFixedRetry> = {}): ResolvedFixedRetry => ({
  delaysMs,
  maxAgeMs: null,
  stopOnStatus: [],
  ...extra,
});

const exponential = (extra: Partial<ResolvedExponentialRetry> = {}): ResolvedExponentialRetry => ({
  attempts: 5,
  backoff: "exponential",
  initialDelayMs: 1000,
  maxDelayMs: 10_000,
  jitter: false,
  maxAgeMs: null,
  stopOnStatus: [],
  ...extra,
});

describe("nextRetryDelay", () => {
  it("follows a fixed schedule, then has no attempt left (today's RETRY_DELAYS_MS)", () => {
    const retry = fixed([3000, 5000, 10000]);
    expect([1, 2, 3, 4].map((attempt) => nextRetryDelay(retry, attempt))).toEqual([3000, 5000, 10000, undefined]);
    expect(nextRetryDelay(fixed([]), 1)).toBeUndefined();
  });

  it("doubles from the initial delay up to the maximum, for `attempts` retries", () => {
    const retry = exponential();
    expect([1, 2, 3, 4, 5, 6].map((attempt) => nextRetryDelay(retry, attempt))).toEqual([
      1000,
      2000,
      4000,
      8000,
      10_000,
      undefined,
    ]);
    expect(nextRetryDelay(exponential({ attempts: 0 }), 1)).toBeUndefined();
  });

  it("stays at the maximum for many retries without overflowing", () => {
    const retry = exponential({ attempts: 20, initialDelayMs: 86_400_000, maxDelayMs: 86_400_000 });
    expect(nextRetryDelay(retry, 20)).toBe(86_400_000);
  });

  it("with jitter, waits a random part of the computed delay", () => {
    const retry = exponential({ jitter: true });
    expect(nextRetryDelay(retry, 3, () => 0.5)).toBe(2000);
    expect(nextRetryDelay(retry, 3, () => 0)).toBe(0);
    expect(nextRetryDelay(retry, 5, () => 0.9999)).toBe(9999);
    expect(nextRetryDelay(retry, 6, () => 0.5)).toBeUndefined();
    for (let i = 0; i < 100; i += 1) {
      const delay = nextRetryDelay(retry, 2) ?? -1;
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThan(2000);
    }
  });

  it("has nothing for an attempt number below 1", () => {
    expect(nextRetryDelay(fixed([100]), 0)).toBeUndefined();
    expect(nextRetryDelay(exponential(), -1)).toBeUndefined();
  });
});

describe("parseRetryAfter", () => {
  const now = Date.parse("2026-12-01T10:00:00Z");

  it("reads delta-seconds", () => {
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
  });

  it("reads the three HTTP-date forms as the wait until then", () => {
    expect(parseRetryAfter("Tue, 01 Dec 2026 10:01:30 GMT", now)).toBe(90_000);
    expect(parseRetryAfter("Tuesday, 01-Dec-26 10:01:30 GMT", now)).toBe(90_000);
    expect(parseRetryAfter("Tue Dec  1 10:01:30 2026", now)).toBe(90_000);
    expect(parseRetryAfter("Tue, 01 Dec 2026 10:01:30 GMT", new Date(now))).toBe(90_000);
  });

  it("gives 0 for a date already past", () => {
    expect(parseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", now)).toBe(0);
  });

  it.each([
    "",
    "-5",
    "1.5",
    "12abc",
    "soon",
    "Tue, 31 Feb 2026 10:00:00 GMT",
    "Tue, 01 Dec 2026 24:00:00 GMT",
    "Tue, 01 Foo 2026 10:00:00 GMT",
    "Tue, 01 Dec 2026 10:00:00 PST",
    "2026-12-01T10:01:30Z",
  ])("refuses %j", (value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });

  it("has nothing without a header", () => {
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("reads a two-digit year more than 50 years ahead as the past century's", () => {
    expect(parseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT", now)).toBe(Date.parse("1994-11-06T08:49:37Z"));
    expect(parseHttpDate("Sunday, 06-Nov-76 08:49:37 GMT", now)).toBe(Date.parse("2076-11-06T08:49:37Z"));
  });
});

describe("retryAfterDelay", () => {
  const now = 1_000_000;

  it("obeys Retry-After on 429 and 503 only", () => {
    expect(retryAfterDelay(429, "30", now, 3_600_000)).toBe(30_000);
    expect(retryAfterDelay(503, "30", now, 3_600_000)).toBe(30_000);
    expect(retryAfterDelay(500, "30", now, 3_600_000)).toBeUndefined();
    expect(retryAfterDelay(302, "30", now, 3_600_000)).toBeUndefined();
    expect(retryAfterDelay(null, "30", now, 3_600_000)).toBeUndefined();
    expect(retryAfterDelay(429, undefined, now, 3_600_000)).toBeUndefined();
    expect(retryAfterDelay(429, "later", now, 3_600_000)).toBeUndefined();
  });

  it("is capped at RETRY_AFTER_MAX_MS", () => {
    expect(retryAfterDelay(429, "86400", now, 3_600_000)).toBe(3_600_000);
  });

  it("lengthens the schedule's wait, never shortens it", () => {
    expect(withRetryAfter(3000, 30_000)).toBe(30_000);
    expect(withRetryAfter(60_000, 30_000)).toBe(60_000);
    expect(withRetryAfter(3000, undefined)).toBe(3000);
  });
});

describe("maxAgeMs", () => {
  const scheduled = Date.parse("2026-12-01T10:00:00Z");

  it("lets no attempt start after scheduledTime + maxAgeMs", () => {
    const retry = fixed([1000], { maxAgeMs: 60_000 });
    expect(maxAgeDeadline(retry, scheduled)).toBe(scheduled + 60_000);
    expect(maxAgeDeadline(retry, new Date(scheduled))).toBe(scheduled + 60_000);
    expect(startsTooLate(retry, scheduled, scheduled + 60_000)).toBe(false);
    expect(startsTooLate(retry, scheduled, new Date(scheduled + 60_001))).toBe(true);
  });

  it("sets no deadline without maxAgeMs", () => {
    expect(maxAgeDeadline(fixed([]), scheduled)).toBeUndefined();
    expect(startsTooLate(fixed([]), scheduled, scheduled + 10 ** 12)).toBe(false);
  });
});

describe("stopOnStatus", () => {
  it("ends the delivery on a listed status only", () => {
    const retry = exponential({ stopOnStatus: [404, 410] });
    expect(stopsOnStatus(retry, 404)).toBe(true);
    expect(stopsOnStatus(retry, 410)).toBe(true);
    expect(stopsOnStatus(retry, 400)).toBe(false);
    expect(stopsOnStatus(retry, null)).toBe(false);
    expect(stopsOnStatus(fixed([]), 404)).toBe(false);
  });
});

describe("planRetry", () => {
  const scheduledTime = Date.parse("2026-12-01T10:00:00Z");
  const now = scheduledTime + 1000;
  const failed = { attempt: 1, responseStatus: 500, scheduledTime, now, retryAfterMaxMs: 3_600_000 };

  it("schedules the next attempt after the schedule's wait", () => {
    expect(planRetry({ ...failed, retry: fixed([3000, 5000]) })).toEqual({ retryAt: now + 3000 });
    expect(planRetry({ ...failed, attempt: 2, retry: fixed([3000, 5000]), now: new Date(now) })).toEqual({
      retryAt: now + 5000,
    });
  });

  it("ends the delivery when no attempt is left", () => {
    expect(planRetry({ ...failed, attempt: 3, retry: fixed([3000, 5000]) })).toEqual({ final: "noAttemptsLeft" });
  });

  it("ends it at once on a stopOnStatus answer, even with retries left", () => {
    expect(planRetry({ ...failed, responseStatus: 410, retry: fixed([3000], { stopOnStatus: [410] }) })).toEqual({
      final: "stopOnStatus",
    });
  });

  it("waits for a 429's Retry-After, capped", () => {
    const retry = fixed([3000]);
    expect(planRetry({ ...failed, responseStatus: 429, retryAfter: "60", retry })).toEqual({ retryAt: now + 60_000 });
    expect(planRetry({ ...failed, responseStatus: 503, retryAfter: "7200", retry })).toEqual({
      retryAt: now + 3_600_000,
    });
    // Retry-After adds no attempt.
    expect(planRetry({ ...failed, attempt: 2, responseStatus: 429, retryAfter: "60", retry })).toEqual({
      final: "noAttemptsLeft",
    });
  });

  it("ends the delivery when the next attempt would start after its maximum age", () => {
    const retry = fixed([3000], { maxAgeMs: 3500 });
    expect(planRetry({ ...failed, retry })).toEqual({ final: "maxAge" });
    expect(planRetry({ ...failed, retry: fixed([3000], { maxAgeMs: 4000 }) })).toEqual({ retryAt: now + 3000 });
    // A Retry-After that pushes the attempt past the deadline ends it too.
    expect(
      planRetry({ ...failed, responseStatus: 429, retryAfter: "10", retry: fixed([1000], { maxAgeMs: 5000 }) }),
    ).toEqual({ final: "maxAge" });
  });

  it("uses the given random source for jitter", () => {
    expect(planRetry({ ...failed, retry: exponential({ jitter: true }), random: () => 0.25 })).toEqual({
      retryAt: now + 250,
    });
  });
});
