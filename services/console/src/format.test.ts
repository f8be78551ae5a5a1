import { describe, expect, it } from "vitest";
import { formatDuration, isoToLocalInput, localInputToIso } from "./format.ts";

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
