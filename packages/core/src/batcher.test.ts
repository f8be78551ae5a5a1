import { describe, expect, it } from "vitest";
import { createBatcher } from "./batcher.ts";

// The batcher gathers the calls of one turn of the event loop into batch calls of at most
// maxBatchSize inputs; each caller gets its own output, or its own batch's error.

describe("createBatcher", () => {
  it("splits a turn's calls into batches of at most maxBatchSize, in order, each input answered with its own output", async () => {
    const batches: number[][] = [];
    const batcher = createBatcher(
      async (inputs: number[]) => {
        batches.push(inputs);
        return inputs.map((input) => `out-${input}`);
      },
      { maxBatchSize: 4 },
    );
    const inputs = Array.from({ length: 10 }, (_, n) => n);
    const outputs = await Promise.all(inputs.map((input) => batcher.run(input)));
    expect(batches).toEqual([
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ]);
    expect(outputs).toEqual(inputs.map((input) => `out-${input}`));
  });

  it("answers each input with its own output when batches finish out of order", async () => {
    // The first batch answers last: outputs must still go to their own callers.
    const batcher = createBatcher(
      async (inputs: string[]) => {
        await new Promise((resolve) => setTimeout(resolve, inputs.includes("a") ? 30 : 0));
        return inputs.map((input) => input.toUpperCase());
      },
      { maxBatchSize: 2 },
    );
    const answered: string[] = [];
    const outputs = await Promise.all(
      ["a", "b", "c", "d", "e"].map((input) =>
        batcher.run(input).then((output) => {
          answered.push(output);
          return output;
        }),
      ),
    );
    expect(outputs).toEqual(["A", "B", "C", "D", "E"]);
    expect(answered.slice(-2).sort()).toEqual(["A", "B"]);
  });

  it("rejects only the items of the batch that failed", async () => {
    const failure = new Error("batch [3,4,5] failed");
    const batcher = createBatcher(
      async (inputs: number[]) => {
        if (inputs.includes(4)) throw failure;
        return inputs.map((input) => input * 10);
      },
      { maxBatchSize: 3 },
    );
    const results = await Promise.allSettled(Array.from({ length: 8 }, (_, n) => batcher.run(n)));
    expect(results).toEqual([
      { status: "fulfilled", value: 0 },
      { status: "fulfilled", value: 10 },
      { status: "fulfilled", value: 20 },
      { status: "rejected", reason: failure },
      { status: "rejected", reason: failure },
      { status: "rejected", reason: failure },
      { status: "fulfilled", value: 60 },
      { status: "fulfilled", value: 70 },
    ]);
  });

  it("rejects only its own batch's items when runBatch throws before returning a promise", async () => {
    const failure = new Error("refused at once");
    const batcher = createBatcher(
      (inputs: number[]) => {
        if (inputs.includes(0)) throw failure;
        return Promise.resolve(inputs.map((input) => input + 1));
      },
      { maxBatchSize: 2 },
    );
    const results = await Promise.allSettled([0, 1, 2, 3].map((input) => batcher.run(input)));
    expect(results).toEqual([
      { status: "rejected", reason: failure },
      { status: "rejected", reason: failure },
      { status: "fulfilled", value: 3 },
      { status: "fulfilled", value: 4 },
    ]);
  });

  it("starts a new batch for calls made in a later turn", async () => {
    const batches: number[][] = [];
    const batcher = createBatcher(async (inputs: number[]) => {
      batches.push(inputs);
      return inputs;
    });
    const first = await Promise.all([batcher.run(1), batcher.run(2)]);
    const second = await batcher.run(3);
    expect([first, second]).toEqual([[1, 2], 3]);
    expect(batches).toEqual([[1, 2], [3]]);
  });

  it("takes 200 inputs per batch by default", async () => {
    const sizes: number[] = [];
    const batcher = createBatcher(async (inputs: number[]) => {
      sizes.push(inputs.length);
      return inputs;
    });
    await Promise.all(Array.from({ length: 450 }, (_, n) => batcher.run(n)));
    expect(sizes).toEqual([200, 200, 50]);
  });

  it("runs at most maxConcurrent batches at once; what gathers meanwhile goes together in the next", async () => {
    const batches: number[][] = [];
    let running = 0;
    let mostRunning = 0;
    const releases: (() => void)[] = [];
    const batcher = createBatcher(
      async (inputs: number[]) => {
        batches.push(inputs);
        running += 1;
        mostRunning = Math.max(mostRunning, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running -= 1;
        return inputs.map((n) => n * 10);
      },
      { maxConcurrent: 1 },
    );
    const first = batcher.run(1);
    await expect.poll(() => batches.length).toBe(1);
    // Three calls in three later turns while the first batch runs: they wait, then go as one.
    const waiting: Promise<number>[] = [];
    for (const n of [2, 3, 4]) {
      waiting.push(batcher.run(n));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(batches).toEqual([[1]]);
    releases.shift()?.();
    expect(await first).toBe(10);
    await expect.poll(() => batches.length).toBe(2);
    expect(batches[1]).toEqual([2, 3, 4]);
    releases.shift()?.();
    expect(await Promise.all(waiting)).toEqual([20, 30, 40]);
    expect(mostRunning).toBe(1);
  });
});
