import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { cronSchedulerId } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../services/api/src/app.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { runBlock, shellBlocks } from "../support/doc-blocks.ts";

// docs/schedules.md's commands, run as the guide shows them against a running API with the default
// limits (3 cron jobs): every curl it shows is answered 2xx and does what the guide says, and the
// preview answers exactly the JSON the guide prints (its startAt, 2030-01-07, must stay ahead).

const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const guide = readFileSync(path.join(repositoryRoot, "docs/schedules.md"), "utf8");
const blocks = shellBlocks(guide);
const jsonBlocks = [...guide.matchAll(/^```json\n([\s\S]*?)^```/gm)].map((match) => JSON.parse(match[1] as string));

let context: TestContext;
let server: Server;
let org: TestOrganization;
let api: ReturnType<typeof createTestApiDeps>;
let env: Record<string, string>;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000", ALLOW_PRIVATE_DESTINATIONS: "false" });
  api = createTestApiDeps(context);
  server = createApp(api.deps).listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", resolve));
  org = await createTestOrganization(context);
  env = { API: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, API_KEY: org.apiKey };
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await context?.close();
});

/** Runs one block of the guide with `-w` added to each curl, and answers each call's status and body. */
async function run(block: string): Promise<{ status: number; body: Record<string, unknown> }[]> {
  const marked = block.replaceAll("curl -s ", "curl -s -w '\\n@@%{http_code}\\n' ");
  const { code, output } = await runBlock(marked, repositoryRoot, env);
  expect(code, output).toBe(0);
  return [...output.matchAll(/([\s\S]*?)\n?@@(\d{3})\n/g)].map((match) => ({
    status: Number(match[2]),
    body: JSON.parse((match[1] as string).trim()),
  }));
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
