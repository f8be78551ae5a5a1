import { createAdmissionStore } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestContext, TestOrganization } from "../support/context.ts";
import { readGuide, runCalls, startGuideApi } from "./guide.ts";

// docs/flows.md's commands, run as the guide shows them against a running API: every curl it shows
// is answered 2xx, does what the guide says, and the answers it prints have the fields it shows.

/** The guide's shell blocks, and its JSON answers in order: a flow, then the list of destinations. */
const { blocks, jsonBlocks } = readGuide("flows.md");

let context: TestContext;
let org: TestOrganization;
let env: Record<string, string>;

beforeAll(async () => {
  ({ context, org, env } = await startGuideApi());
  // The origin the guide resets, Unhealthy as a worker's breaker would leave it.
  const store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
  await store.report(org.orgId, "https://example.com", "ff", { failures: 2, minSpanMs: 0 });
});
afterAll(() => context?.close());

const run = (block: string) => runCalls(block, env);

describe("docs/flows.md", () => {
  it("has the blocks this test runs: the setting of API and API_KEY, then the calls", () => {
    expect(blocks[0]).toMatch(/^export API=http:\/\/localhost:3000 API_KEY=/);
    expect(blocks).toHaveLength(8);
    expect(jsonBlocks).toHaveLength(2);
  });

  it("runs as written, each call answered as the guide says", async () => {
    const [, create, limits, pause, waits, remove, destinations, reset] = blocks as string[];

    const [event, cronJob] = await run(create as string);
    expect([event?.status, cronJob?.status]).toEqual([200, 200]);
    expect(JSON.parse(event?.body as string)).toMatchObject({ flowKey: "invoices", status: "Pending" });
    expect(JSON.parse(cronJob?.body as string)).toMatchObject({ flowKey: "reports" });

    const configured = await run(limits as string);
    expect(configured.map((call) => call.status)).toEqual([200, 200]);
    expect(JSON.parse(configured[0]?.body as string)).toMatchObject({ rate: 50, periodMs: 1000, parallelism: 5 });
    expect(JSON.parse(configured[1]?.body as string)).toMatchObject({ rate: 1000, periodMs: 3_600_000 });

    const [paused, resumed] = await run(pause as string);
    expect(JSON.parse(paused?.body as string)).toMatchObject({ flowKey: "invoices", paused: true });
    expect(JSON.parse(resumed?.body as string)).toMatchObject({ flowKey: "invoices", paused: false });

    const [flow] = await run(waits as string);
    expect(flow?.status).toBe(200);
    const answered = JSON.parse(flow?.body as string);
    expect(Object.keys(answered)).toEqual(Object.keys(jsonBlocks[0]));
    expect(answered).toMatchObject({ flowKey: "invoices", rate: 50, periodMs: 1000, parallelism: 5 });

    const [deleted] = await run(remove as string);
    expect(deleted).toEqual({ status: 204, body: "" });
    expect(await context.db.flow.count({ where: { orgId: org.orgId } })).toBe(1);
    const stored = await context.db.event.findMany({ where: { orgId: org.orgId }, select: { flowKey: true } });
    expect(stored).toEqual([{ flowKey: "invoices" }]);

    const [listed] = await run(destinations as string);
    const list = JSON.parse(listed?.body as string);
    expect(list).toEqual([expect.objectContaining({ origin: "https://example.com", state: "Unhealthy" })]);
    expect(Object.keys(list[0])).toEqual(Object.keys(jsonBlocks[1][0]));

    const [done] = await run(reset as string);
    expect(done?.status).toBe(200);
    expect(JSON.parse(done?.body as string)).toMatchObject({ origin: "https://example.com", state: "Healthy" });
  });
});
