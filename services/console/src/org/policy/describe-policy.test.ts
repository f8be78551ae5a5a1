import { describe, expect, it } from "vitest";
import { describeMaxAge, describeRetries, describeStopOnStatus, formatSpan } from "./describe-policy.ts";

describe("formatSpan", () => {
  it("writes the largest unit that fits, to one decimal at most", () => {
    expect(formatSpan(250)).toBe("250 ms");
    expect(formatSpan(3_000)).toBe("3 s");
    expect(formatSpan(1_500)).toBe("1.5 s");
    expect(formatSpan(60_000)).toBe("1 min");
    expect(formatSpan(90_000)).toBe("1.5 min");
    expect(formatSpan(7_200_000)).toBe("2 h");
    expect(formatSpan(86_400_000)).toBe("1 d");
  });
});

describe("describeRetries", () => {
  it("lists a fixed schedule's delays", () => {
    expect(describeRetries({ delaysMs: [3_000, 5_000, 10_000], maxAgeMs: null, stopOnStatus: [] })).toBe(
      "3 retries: 3 s, 5 s, 10 s",
    );
    expect(describeRetries({ delaysMs: [500], maxAgeMs: null, stopOnStatus: [] })).toBe("1 retry: 500 ms");
    expect(describeRetries({ delaysMs: [], maxAgeMs: null, stopOnStatus: [] })).toBe("no retries");
  });

  it("says an exponential schedule's bounds and jitter", () => {
    const exponential = {
      attempts: 5,
      backoff: "exponential" as const,
      initialDelayMs: 1_000,
      maxDelayMs: 60_000,
      jitter: true,
      maxAgeMs: null,
      stopOnStatus: [],
    };
    expect(describeRetries(exponential)).toBe("up to 5 retries, exponential from 1 s to 1 min, with jitter");
    expect(describeRetries({ ...exponential, attempts: 1, jitter: false })).toBe(
      "up to 1 retry, exponential from 1 s to 1 min",
    );
    expect(describeRetries({ ...exponential, attempts: 0 })).toBe("no retries");
  });
});

describe("the deadline and the final statuses", () => {
  it("are said only when set", () => {
    expect(describeMaxAge(3_600_000)).toBe("no attempt starts later than 1 h after the scheduled time");
    expect(describeMaxAge(null)).toBeUndefined();
    expect(describeStopOnStatus([404, 410])).toBe("404, 410 end the delivery at once");
    expect(describeStopOnStatus([])).toBeUndefined();
  });
});
