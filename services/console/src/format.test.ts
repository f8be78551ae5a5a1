import { describe, expect, it } from "vitest";
import { formatAgo, formatDuration, isoToLocalInput, localInputToIso } from "./format.ts";

describe("formatDuration", () => {
  it("writes milliseconds, seconds and minutes, with a decimal below 10 ms", () => {
    expect(formatDuration(null)).toBe("—");
    expect(formatDuration(undefined)).toBe("—");
    expect(formatDuration(0)).toBe("0 ms");
    expect(formatDuration(2.5)).toBe("2.5 ms");
    expect(formatDuration(87)).toBe("87 ms");
    expect(formatDuration(1_500)).toBe("1.5 s");
    expect(formatDuration(90_000)).toBe("1.5 min");
  });
});

describe("datetime-local values", () => {
  it("go to an ISO instant and back to the same local value", () => {
    const iso = localInputToIso("2027-01-15T09:30");
    expect(iso).toMatch(/^2027-01-1[456]T\d{2}:\d{2}:00\.000Z$/);
    expect(isoToLocalInput(iso)).toBe("2027-01-15T09:30");
  });

  it("leave an empty or invalid value empty", () => {
    expect(localInputToIso("")).toBe("");
    expect(localInputToIso("not a time")).toBe("");
    expect(isoToLocalInput("nope")).toBe("");
  });
});

describe("formatAgo", () => {
  const now = Date.parse("2027-03-01T12:00:00.000Z");
  const before = (ms: number) => new Date(now - ms).toISOString();

  it("writes how long ago in the largest unit that fits, whole", () => {
    expect(formatAgo(before(2_000), now)).toBe("just now");
    expect(formatAgo(before(42_000), now)).toBe("42 s ago");
    expect(formatAgo(before(3 * 60_000 + 59_000), now)).toBe("3 min ago");
    expect(formatAgo(before(5 * 3_600_000), now)).toBe("5 h ago");
    expect(formatAgo(before(47 * 3_600_000), now)).toBe("47 h ago");
    expect(formatAgo(before(3 * 86_400_000), now)).toBe("3 d ago");
  });

  it("writes a time ahead of the clock as just now, and no time as a dash", () => {
    expect(formatAgo(new Date(now + 10_000).toISOString(), now)).toBe("just now");
    expect(formatAgo(null, now)).toBe("—");
    expect(formatAgo("not a time", now)).toBe("not a time");
  });
});
