import { fixedClock } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";

// Contract §3 (amended): a repeat of an Idempotency-Key within 24 hours must be the same request.
// The same payload, destination and time (however the instant is spelled) answers the first event
// and creates nothing; anything else answers 422 and creates nothing either.

const REUSED = { message: "Idempotency-Key was already used with a different request" };
const NOW = new Date("2030-01-05T00:00:00.000Z");
const body = {
  payload: '{"order":42}',
  destination: "https://example.com/hook",
  scheduledTime: "2030-01-20T10:00:00Z",
};

let context: TestContext;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext();
  app = createApp(createTestApiDeps(context, fixedClock(NOW)).deps);
});
afterAll(() => context.close());

const create = (org: TestOrganization, key: string, fields: Record<string, unknown> = body) =>
  request(app).post("/api/events").set("x-api-key", org.apiKey).set("Idempotency-Key", key).send(fields);

const eventCount = async (org: TestOrganization) =>
  (await context.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE org_id = ${org.orgId}`)[0]
    ?.n;

const usage = async (org: TestOrganization) =>
  (
    await context.db.$queryRaw<{ count: number }[]>`
      SELECT count FROM event_monthly_usage WHERE org_id = ${org.orgId} AND month = '2030-01-01'::date`
  )[0]?.count;

describe("Idempotency-Key with the same request", () => {
  it("answers 200 with the first event and creates nothing, however the time is spelled", async () => {
    const org = await createTestOrganization(context);
    const first = await create(org, "order-42");
    expect(first.status).toBe(200);
    for (const scheduledTime of ["2030-01-20T10:00:00Z", "2030-01-20T10:00:00.000Z", "2030-01-20T11:00:00+01:00"]) {
      const repeat = await create(org, "order-42", { ...body, scheduledTime });
      expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    }
    // Key order in the JSON body does not make another request.
    const reordered = await create(org, "order-42", {
      scheduledTime: body.scheduledTime,
      destination: body.destination,
      payload: body.payload,
    });
    expect(reordered.body.id).toBe(first.body.id);
    expect(await eventCount(org)).toBe(1);
    expect(await usage(org)).toBe(1);
  });
});

describe("Idempotency-Key with a different request", () => {
  it.each([
    ["payload", { payload: '{"order":43}' }],
    ["destination", { destination: "https://example.com/other-hook" }],
    ["time", { scheduledTime: "2030-01-20T10:00:01Z" }],
  ])("answers 422 for a different %s and creates nothing", async (_name, change) => {
    const org = await createTestOrganization(context);
    const first = await create(org, "order-42");
    expect(first.status).toBe(200);
    const other = await create(org, "order-42", { ...body, ...change });
    expect({ status: other.status, body: other.body }).toEqual({ status: 422, body: REUSED });
    expect(await eventCount(org)).toBe(1);
    expect(await usage(org)).toBe(1);
    // The first request is still answered as before.
    expect((await create(org, "order-42")).body).toEqual(first.body);
  });

  it("answers 422 to the losers when different requests race with one key", async () => {
    const org = await createTestOrganization(context);
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, n) => create(org, "race", { ...body, payload: `{"n":${n}}` })),
    );
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, 422, 422, 422, 422, 422]);
    expect(responses.filter((response) => response.status === 422).map((response) => response.body)).toEqual(
      Array(5).fill(REUSED),
    );
    expect(await eventCount(org)).toBe(1);
    expect(await usage(org)).toBe(1);
  });

  it("takes an event stored before request digests were kept as the same request", async () => {
    const org = await createTestOrganization(context);
    const first = await create(org, "legacy");
    await context.db.$executeRaw`UPDATE events SET request_digest = NULL WHERE id = ${first.body.id}`;
    const repeat = await create(org, "legacy", { ...body, payload: "something else" });
    expect({ status: repeat.status, body: repeat.body }).toEqual({ status: 200, body: first.body });
    expect(await eventCount(org)).toBe(1);
  });

  it("keeps the check per organization: another organization's key is another key", async () => {
    const org = await createTestOrganization(context);
    const otherOrg = await createTestOrganization(context);
    expect((await create(org, "shared")).status).toBe(200);
    const theirs = await create(otherOrg, "shared", { ...body, payload: "theirs" });
    expect(theirs.status).toBe(200);
    expect(theirs.body.payload).toBe("theirs");
  });
});
