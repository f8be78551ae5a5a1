import { cronSchedulerId } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../support/context.ts";
import { readGuide, runCalls, startGuideApi } from "./guide.ts";

// docs/schedules.md's commands, run as the guide shows them against a running API with the default
// limits (3 cron jobs): every curl it shows is answered 2xx and does what the guide says, and the
// preview answers exactly the JSON the guide prints (its startAt, 2030-01-07, must stay ahead).

const { blocks, jsonBlocks } = readGuide("schedules.md");

let context: TestContext;
let org: TestOrganization;
/** The queues of the API, where it keeps cron jobs' schedulers. */
let api: ReturnType<typeof createTestApiDeps>;
let env: Record<string, string>;

beforeAll(async () => {
  ({ context, org, env } = await startGuideApi());
  api = createTestApiDeps(context);
});
afterAll(() => context?.close());

/** Runs one block of the guide, and answers each call's status and body, parsed. */
async function run(block: string): Promise<{ status: number; body: Record<string, unknown> }[]> {
  return (await runCalls(block, env)).map(({ status, body }) => ({ status, body: JSON.parse(body) }));
}

const tomorrowAt = (hour: number) => {
  const day = 86_400_000;
  return new Date(Math.floor(Date.now() / day) * day + day + hour * 3_600_000).toISOString();
};

describe("docs/schedules.md", () => {
  it("has the blocks this test runs: the settings of API, API_KEY and JOB, then the calls", () => {
    expect(blocks[0]).toMatch(/^export API=http:\/\/localhost:3000 API_KEY=/);
    expect(blocks[3]).toMatch(/^export JOB=cron_/);
    expect(blocks).toHaveLength(7);
    expect(jsonBlocks).toHaveLength(1);
  });

  it("runs as written, each call answered as the guide says", async () => {
    const [, creates, windowed, , policies, edits, preview] = blocks as string[];

    const [seconds, interval] = await run(creates as string);
    expect([seconds?.status, interval?.status]).toEqual([200, 200]);
    expect(seconds?.body).toMatchObject({ expression: "*/30 * * * * *", every: null, status: "Active" });
    expect(interval?.body).toMatchObject({ expression: null, every: "PT5M", startAt: null });
    const createdAt = Date.parse(interval?.body.createdAt as string);
    expect(interval?.body.nextExecutionDate).toBe(new Date(createdAt + 5 * 60_000).toISOString());

    const [reminder] = await run(windowed as string);
    expect(reminder?.status).toBe(200);
    expect(reminder?.body).toMatchObject({
      every: "PT1H",
      startAt: tomorrowAt(9),
      endAt: tomorrowAt(17),
      maxRuns: 5,
      nextExecutionDate: tomorrowAt(9),
    });

    const id = interval?.body.id as string;
    env.JOB = id;
    const [configured] = await run(policies as string);
    expect(configured).toMatchObject({
      status: 200,
      body: { id, catchUp: "all", catchUpWindowMs: 600_000, overlap: "skip", jitterMs: 20_000 },
    });

    const [toExpression, toInterval] = await run(edits as string);
    expect(toExpression).toMatchObject({
      status: 200,
      body: { expression: "0 6 * * 1-5", timezone: "Europe/Paris", every: null, endAt: null },
    });
    expect(toInterval).toMatchObject({ status: 200, body: { expression: null, every: "PT15M", maxRuns: 10 } });
    expect(await api.cronQueue.getJobScheduler(cronSchedulerId(id))).toMatchObject({
      pattern: expect.stringMatching(/^lead 1000 every 900000 from \d+$/),
    });

    const [previewed] = await run(preview as string);
    expect(previewed).toEqual({ status: 200, body: jsonBlocks[0] });
    expect(await context.db.cronJob.count({ where: { orgId: org.orgId } })).toBe(3);
  });
});
