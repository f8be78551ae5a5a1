import { createLogger, type FlowLimits } from "@punctual/core";
import { expect, it } from "vitest";
import { createFlowLimitsCache } from "./flow-limits-cache.ts";

// The cache's coordination of reads: which readers share a read, and who is told what after it.
// The read itself is a parameter here (against Postgres it is readFlowLimits, tested with the flows).

interface Read {
  flows: string[];
  answer(found: Map<string, FlowLimits>): void;
  fail(error: Error): void;
}

function setup() {
  const reads: Read[] = [];
  const known: string[] = [];
  const unknown: string[] = [];
  const cache = createFlowLimitsCache<{ orgId: string; flowKey: string | null }>({
    readLimits: (flows) =>
      new Promise((resolve, reject) => {
        reads.push({ flows: flows.map((flow) => flow.flowKey), answer: resolve, fail: reject });
      }),
    logger: createLogger({ LOG_LEVEL: "silent" }, "test"),
    known: (reader) => known.push(reader.flowKey ?? ""),
    unknown: (reader) => unknown.push(reader.flowKey ?? ""),
  });
  return { cache, reads, known, unknown };
}

it("reads the flows asked for in one turn together", async () => {
  const { cache, reads, known } = setup();
  cache.read({ orgId: "org", flowKey: "a" });
  cache.read({ orgId: "org", flowKey: "b" });
  await expect.poll(() => reads.length).toBe(1);
  expect(reads[0]?.flows).toEqual(["a", "b"]);
  reads[0]?.answer(new Map());
  await expect.poll(() => known).toEqual(["a", "b"]);
  expect(cache.fresh("org", "a")).toBeDefined();
});

it("after a failed read, still reads for the readers that came while it was under way", async () => {
  const { cache, reads, known, unknown } = setup();
  cache.read({ orgId: "org", flowKey: "a" });
  await expect.poll(() => reads.length).toBe(1);
  // Comes while the first read is under way: it waits for that read to end.
  cache.read({ orgId: "org", flowKey: "b" });
  reads[0]?.fail(new Error("connection lost"));
  await expect.poll(() => unknown).toEqual(["a"]);
  // The second reader is not left waiting for a read nobody starts.
  await expect.poll(() => reads.length).toBe(2);
  expect(reads[1]?.flows).toEqual(["b"]);
  reads[1]?.answer(new Map());
  await expect.poll(() => known).toEqual(["b"]);
});
