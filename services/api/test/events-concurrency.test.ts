import { createApiKey, type EventJobData, revokeApiKey } from "@punctual/core";
import type { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { startLiveApi } from "../../../test/support/live-api.ts";

// Concurrent creates over one listening server: the API key lookups, the inserts and the queue adds
// of requests arriving together are shared, and every request must still get its own answer, its
// own row and its own delayed job.

// Inside ENQUEUE_HORIZON_MS (1 h), so that each create queues its job.
const HALF_HOUR_MS = 30 * 60 * 1000;

let context: TestContext;
let queue: Queue<EventJobData>;
let base: string;

beforeAll(async () => {
  context = await createTestContext();
  queue = createTestApiDeps(context).queue;
  base = (await startLiveApi(context)).baseUrl;
});
afterAll(() => context?.close());

const create = async (apiKey: string, n: number) => {
  const response = await fetch(`${base}/api/events`, {
    method: "POST",
    headers: { "x-api-key": apiKey, "content-type": "application/json" },
    body: JSON.stringify({
      payload: `{"n":${n}}`,
      destination: `https://example.com/hook/${n}`,
      scheduledTime: new Date(Date.now() + HALF_HOUR_MS + n * 1000).toISOString(),
    }),
  });
  return { n, status: response.status, body: (await response.json()) as { id?: string; payload?: string } };
};

const storedIds = async (org: TestOrganization) =>
  (
    await context.db.$queryRaw<
      { id: string }[]
    >`SELECT id FROM events WHERE org_id = ${org.orgId} AND status = 'Pending'`
  ).map((row) => row.id);

describe("concurrent creates", () => {
  it("answers each request as if it came alone: its key, its row, its job", async () => {
    const [a, b] = [await createTestOrganization(context), await createTestOrganization(context)];
    const revoked = await createApiKey(context, { orgId: a.orgId });
    await revokeApiKey(context, { keyId: revoked.keyId });
    const calls = [
      ...Array.from({ length: 40 }, (_, n) => ({ key: a.apiKey, expected: 200, n })),
      ...Array.from({ length: 10 }, (_, n) => ({ key: b.apiKey, expected: 200, n: 100 + n })),
      ...Array.from({ length: 5 }, (_, n) => ({ key: revoked.apiKey, expected: 401, n: 200 + n })),
      ...Array.from({ length: 5 }, (_, n) => ({ key: `pk_unknown${n}`, expected: 401, n: 300 + n })),
    ];
    const responses = await Promise.all(calls.map((call) => create(call.key, call.n)));

    expect(responses.map((response) => response.status)).toEqual(calls.map((call) => call.expected));
    const created = responses.filter((response) => response.status === 200);
    for (const response of created) expect(response.body.payload).toBe(`{"n":${response.n}}`);
    const idsOf = (from: number, to: number) =>
      created.filter((response) => response.n >= from && response.n < to).map((response) => response.body.id);
    expect((await storedIds(a)).sort()).toEqual(idsOf(0, 40).sort());
    expect((await storedIds(b)).sort()).toEqual(idsOf(100, 110).sort());

    for (const { body } of created) {
      const job = await queue.getJob(`event-${body.id}`);
      expect(job?.data).toEqual({ eventId: body.id });
      expect(await job?.isDelayed()).toBe(true);
    }
    expect(await queue.getDelayedCount()).toBe(50);
  });
});
