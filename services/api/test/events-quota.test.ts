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

// The monthly quota and idempotent creates. The limit is lowered to 25 so the month fills quickly
// through the API itself; the counting is the same as at the default 1000.

const LIMIT = 25;
const LIMIT_REACHED = `Monthly limit of ${LIMIT} scheduled events reached for this organization`;
const NOW = new Date("2030-01-05T00:00:00.000Z");
const clock = fixedClock(NOW);
const JANUARY = "2030-01-20T10:00:00.000Z";
const FEBRUARY = "2030-02-20T10:00:00.000Z";

let context: TestContext;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: String(LIMIT) });
  app = createApp(createTestApiDeps(context, clock).deps);
});
afterAll(() => context.close());

const create = (org: TestOrganization, scheduledTime = JANUARY, key?: string) => {
  const call = request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send({ payload: "{}", destination: "https://example.com/hook", scheduledTime });
  return key === undefined ? call : call.set("Idempotency-Key", key);
};

async function usage(org: TestOrganization, month: string): Promise<number> {
  const rows = await context.db.$queryRaw<{ count: number }[]>`
    SELECT count FROM event_monthly_usage WHERE org_id = ${org.orgId} AND month = ${month}::date`;
  return rows[0]?.count ?? 0;
}

const eventCount = async (org: TestOrganization) =>
  (await context.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE org_id = ${org.orgId}`)[0]
    ?.n;

describe("monthly quota", () => {
  it("lets exactly the remaining creates through when 20 race for the last 5 units", async () => {
    const org = await createTestOrganization(context);
    const seeded = await Promise.all(Array.from({ length: LIMIT - 5 }, () => create(org)));
    expect(seeded.map((response) => response.status)).toEqual(Array(LIMIT - 5).fill(200));

    const racing = await Promise.all(Array.from({ length: 20 }, () => create(org)));
    const succeeded = racing.filter((response) => response.status === 200);
    const refused = racing.filter((response) => response.status !== 200);
    expect(succeeded).toHaveLength(5);
    expect(refused).toHaveLength(15);
    for (const response of refused) {
      expect({ status: response.status, body: response.body }).toEqual({
        status: 403,
        body: { message: LIMIT_REACHED },
      });
    }
    expect(await usage(org, "2030-01-01")).toBe(LIMIT);
    expect(await eventCount(org)).toBe(LIMIT);

    // Another month is counted on its own.
    expect((await create(org, FEBRUARY)).status).toBe(200);
  });

  it("gives a unit back when an event is cancelled", async () => {
    const org = await createTestOrganization(context);
    const created = await Promise.all(Array.from({ length: LIMIT }, () => create(org)));
    const full = await create(org);
    expect({ status: full.status, body: full.body }).toEqual({ status: 403, body: { message: LIMIT_REACHED } });

    const cancel = await request(app)
      .put(`/api/events/${created[0]?.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ status: "Cancelled" });
    expect(cancel.status).toBe(200);
    expect(await usage(org, "2030-01-01")).toBe(LIMIT - 1);
    expect((await create(org)).status).toBe(200);
    expect((await create(org)).status).toBe(403);
  });

  it("refuses to move an event into a full month, and keeps it where it was", async () => {
    const org = await createTestOrganization(context);
    await Promise.all(Array.from({ length: LIMIT }, () => create(org)));
    const february = await create(org, FEBRUARY);
    const move = await request(app)
      .put(`/api/events/${february.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: JANUARY });
    expect({ status: move.status, body: move.body }).toEqual({ status: 403, body: { message: LIMIT_REACHED } });
    const unchanged = await request(app).get(`/api/events/${february.body.id}`).set("x-api-key", org.apiKey);
    expect(unchanged.body.scheduledTime).toBe(FEBRUARY);
    expect(await usage(org, "2030-02-01")).toBe(1);
  });
});

describe("the monthly quota at a UTC month boundary", () => {
  // November 2026 (UTC) is full; its last millisecond still counts toward it, the first
  // millisecond of December toward December.
  const LAST_OF_NOVEMBER = "2026-11-30T23:59:59.999Z";
  const FIRST_OF_DECEMBER = "2026-12-01T00:00:00.000Z";

  it("refuses 2026-11-30T23:59:59.999Z and accepts 2026-12-01T00:00:00.000Z for an organization at its November limit", async () => {
    // Its own clock, in November 2026: both times are in the future.
    const novemberApp = createApp(createTestApiDeps(context, fixedClock(new Date("2026-11-10T08:00:00.000Z"))).deps);
    const createAt = (org: TestOrganization, scheduledTime: string) =>
      request(novemberApp)
        .post("/api/events")
        .set("x-api-key", org.apiKey)
        .send({ payload: "{}", destination: "https://example.com/hook", scheduledTime });
    const org = await createTestOrganization(context);
    const november = await Promise.all(
      Array.from({ length: LIMIT }, (_, n) =>
        createAt(org, `2026-11-${String(11 + (n % 19)).padStart(2, "0")}T12:00:00.000Z`),
      ),
    );
    expect(november.map((response) => response.status)).toEqual(Array(LIMIT).fill(200));
    expect(await usage(org, "2026-11-01")).toBe(LIMIT);

    const last = await createAt(org, LAST_OF_NOVEMBER);
    expect({ status: last.status, body: last.body }).toEqual({ status: 403, body: { message: LIMIT_REACHED } });
    const first = await createAt(org, FIRST_OF_DECEMBER);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ scheduledTime: FIRST_OF_DECEMBER, status: "Pending" });

    expect(await usage(org, "2026-11-01")).toBe(LIMIT);
    expect(await usage(org, "2026-12-01")).toBe(1);
    expect(await eventCount(org)).toBe(LIMIT + 1);
  });
});

describe("Idempotency-Key", () => {
  it("returns the first event for a repeat, with one row and one unit", async () => {
    const org = await createTestOrganization(context);
    const first = await create(org, JANUARY, "order-42");
    const repeat = await create(org, JANUARY, "order-42");
    expect(first.status).toBe(200);
    expect(repeat.status).toBe(200);
    expect(repeat.body).toEqual(first.body);
    expect(await eventCount(org)).toBe(1);
    expect(await usage(org, "2030-01-01")).toBe(1);
  });

  it("holds when the repeats race", async () => {
    const org = await createTestOrganization(context);
    const responses = await Promise.all(Array.from({ length: 8 }, () => create(org, JANUARY, "same-key")));
    expect(responses.map((response) => response.status)).toEqual(Array(8).fill(200));
    expect(new Set(responses.map((response) => response.body.id)).size).toBe(1);
    expect(await eventCount(org)).toBe(1);
    expect(await usage(org, "2030-01-01")).toBe(1);
  });

  it("keeps keys apart per organization and creates anew after 24 hours", async () => {
    const org = await createTestOrganization(context);
    const otherOrg = await createTestOrganization(context);
    const mine = await create(org, JANUARY, "shared");
    const theirs = await create(otherOrg, JANUARY, "shared");
    expect(theirs.body.id).not.toBe(mine.body.id);

    clock.advance(24 * 60 * 60 * 1000 + 1);
    try {
      const later = await create(org, JANUARY, "shared");
      expect(later.status).toBe(200);
      expect(later.body.id).not.toBe(mine.body.id);
      expect(await eventCount(org)).toBe(2);
    } finally {
      clock.set(NOW);
    }
  });
});
