import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../../../../test/support/context.ts";
import { type AdmissionStore, createAdmissionStore, type FlowLimits } from "./admission-store.ts";

// The admission script against a real Redis: a line asks for a whole burst's attempts at once, so
// one ask may take more starts than the script writes in one command.

let context: TestContext;
let store: AdmissionStore;

beforeAll(async () => {
  context = await createTestContext();
  store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
});

afterAll(async () => {
  await context?.close();
});

const limits = (change: Partial<FlowLimits>): FlowLimits => ({
  rate: null,
  periodMs: 60_000,
  parallelism: null,
  paused: false,
  ...change,
});

const ask = (flowKey: string, wanted: number, flowLimits: FlowLimits) =>
  store.admit({
    orgId: "org_1",
    origin: "https://receiver.test",
    wanted,
    probeMs: 500,
    flow: { key: flowKey, limits: flowLimits, leaseMs: 60_000 },
  });

const flowKeys = (flowKey: string) => ({
  starts: `${context.config.QUEUE_PREFIX}:flow:org_1:${flowKey}:starts`,
  leases: `${context.config.QUEUE_PREFIX}:flow:org_1:${flowKey}:leases`,
});

it("grants an ask of 2,500 at once, each start and lease counted once, and the limits hold after it", async () => {
  const flowLimits = limits({ rate: 3_000, parallelism: 2_600 });
  const answer = await ask("big", 2_500, flowLimits);
  expect(answer.granted).toBe(2_500);
  if (!("leases" in answer)) throw new Error("expected a grant");
  expect(new Set(answer.leases).size).toBe(2_500);
  const { starts, leases } = flowKeys("big");
  expect(await context.redis.zcard(starts)).toBe(2_500);
  expect(await context.redis.zcard(leases)).toBe(2_500);
  // Every lease answered is one the set holds (the worker gives back exactly these).
  const held = new Set(await context.redis.zrange(leases, 0, -1));
  expect(answer.leases.every((lease) => held.has(lease))).toBe(true);

  // Parallelism leaves 100 of the next ask; then nothing, for want of a free lease.
  const next = await ask("big", 1_000, flowLimits);
  expect(next.granted).toBe(100);
  expect(await ask("big", 1, flowLimits)).toMatchObject({ granted: 0, reason: "parallelism" });
});

it("stops an ask of 2,500 at the rate, writing only the starts it granted", async () => {
  const answer = await ask("rated", 2_500, limits({ rate: 1_200 }));
  expect(answer.granted).toBe(1_200);
  expect(await context.redis.zcard(flowKeys("rated").starts)).toBe(1_200);
  expect(await ask("rated", 1, limits({ rate: 1_200 }))).toMatchObject({ granted: 0, reason: "rate" });
});
