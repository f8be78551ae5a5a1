import { describe, expect, it } from "vitest";
import { newId } from "./ids.ts";

describe("newId", () => {
  it("is a prefix and 26 base32 characters", () => {
    expect(newId("evt")).toMatch(/^evt_[0-9a-hjkmnp-tv-z]{26}$/);
  });

  it("sorts by creation time", async () => {
    const first = newId("evt");
    await new Promise((resolve) => setTimeout(resolve, 2));
    const second = newId("evt");
    expect(first < second).toBe(true);
    expect(first.slice(0, 14) < second.slice(0, 14)).toBe(true);
  });

  it("does not repeat", () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => newId("run")));
    expect(ids.size).toBe(10_000);
  });

  it("encodes the time like a ULID", () => {
    const before = Date.now();
    const id = newId("org");
    const decoded = [...id.slice(4, 14)].reduce(
      (value, char) => value * 32 + "0123456789abcdefghjkmnpqrstvwxyz".indexOf(char),
      0,
    );
    expect(decoded).toBeGreaterThanOrEqual(before);
    expect(decoded).toBeLessThanOrEqual(Date.now());
  });
});
