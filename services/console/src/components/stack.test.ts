import { describe, expect, it } from "vitest";
import { stack } from "./stack.ts";

describe("stack", () => {
  it("turns each series into the running total of the series up to it, per bucket", () => {
    expect(
      stack(
        [10, 20, 30],
        [
          [1, 0, 2],
          [3, 1, 0],
          [0, 4, 1],
        ],
      ),
    ).toEqual([
      [10, 20, 30],
      [1, 0, 2],
      [4, 1, 2],
      [4, 5, 3],
    ]);
  });

  it("keeps the buckets when there are no series", () => {
    expect(stack([1, 2], [])).toEqual([[1, 2]]);
  });
});
