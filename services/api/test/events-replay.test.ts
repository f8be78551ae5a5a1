import { eventJobId, systemClock } from "@punctual/core";
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

// Replay of one event and bulk replay of failed ones, through the API on a real Postgres and Redis.
// No worker runs in this file (events-replay-delivery.test.ts delivers replays): the replays stay
// Pending with their jobs on the queue. Past deliveries are written straight into the rows.

const DAY_MS = 24 * 60 * 60 * 1000;
const DESTINATION = "https://example.com/replayed";
const ONLY_SENT_OR_FAILED = "Only sent or failed events can be replayed";

let context: TestContext;
let api: ReturnType<typeof createTestApiDeps>;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext();
  api = createTestApiDeps(context, systemClock);
  app = createApp(api.deps);
});
afterAll(() => context.close());

type FinalStatus = "Sent" | "Failed To Send" | "Failed To Queue";

/** An event of `org` created through the API, then left as a worker (or the reconciler) would leave it. */
async function storedEvent(
  org: TestOrganization,
  status: FinalStatus | "Pending" | "Queued" | "Cancelled",
  options: { minutesAgo?: number; payload?: string } = {},
): Promise<string> {
  const created = await request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send({
      payload: options.payload ?? JSON.stringify({ status }),
      destination: DESTINATION,
      scheduledTime: new Date(Date.now() + DAY_MS).toISOString(),
    });
  expect(created.status).toBe(200);
  const id: string = created.body.id;
  if (status === "Pending") return id;
  if (status === "Cancelled") {
    const cancelled = await request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey).send({ status });
    expect(cancelled.status).toBe(200);
    return id;
  }
  const at = new Date(Date.now() - (options.minutesAgo ?? 10) * 60_000);
  await context.db.$executeRaw`
    UPDATE events SET status = ${status}, scheduled_time = ${at},
      sent_at = ${status === "Sent" ? at : null}, failed_at = ${status.startsWith("Failed") ? at : null}
    WHERE id = ${id}`;
  return id;
}

const replay = (org: TestOrganization, id: string, body?: object) => {
  const call = request(app).post(`/api/events/${id}/replay`).set("x-api-key", org.apiKey);
  return body === undefined ? call : call.send(body);
};

const bulk = (org: TestOrganization, body: object, on = app) =>
  request(on).post("/api/events/replay").set("x-api-key", org.apiKey).send(body);

async function usage(orgId: string): Promise<number> {
  const rows = await context.db.$queryRaw<{ count: number }[]>`
    SELECT COALESCE(SUM(count), 0)::int AS count FROM event_monthly_usage WHERE org_id = ${orgId}`;
  return rows[0]?.count ?? 0;
}

const eventCount = async (orgId: string) => context.db.event.count({ where: { orgId } });

describe("POST /api/events/:eventId/replay", () => {
  it("replays a Sent event as a new Pending event due now, with the same payload and destination and replayOf set, and queues it", async () => {
    const org = await createTestOrganization(context);
    const original = await storedEvent(org, "Sent", { payload: '{"order":42}' });
    const usageBefore = await usage(org.orgId);
    const before = Date.now();

    const response = await replay(org, original);

    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: "Pending",
      payload: '{"order":42}',
      destination: DESTINATION,
      org: org.orgId,
      replayOf: original,
    });
    expect(response.body.id).not.toBe(original);
    const due = new Date(response.body.scheduledTime).getTime();
    expect(due).toBeGreaterThanOrEqual(before - 1);
    expect(due).toBeLessThanOrEqual(Date.now());
    expect(await usage(org.orgId)).toBe(usageBefore + 1);
    expect(await api.queue.getJob(eventJobId(response.body.id))).toBeDefined();
    // The original is left as it was, and reads replayOf null.
    const originalNow = await request(app).get(`/api/events/${original}`).set("x-api-key", org.apiKey);
    expect(originalNow.body).toMatchObject({ status: "Sent", replayOf: null });
    // The replay reads back with its replayOf, alone and in the list.
    const fetched = await request(app).get(`/api/events/${response.body.id}`).set("x-api-key", org.apiKey);
    expect(fetched.body).toMatchObject({ id: response.body.id, replayOf: original, history: [] });
    const listed = await request(app).get("/api/events?status=Pending").set("x-api-key", org.apiKey);
    expect(listed.body.find((event: { id: string }) => event.id === response.body.id)?.replayOf).toBe(original);
  });

  it("replays Failed To Send and Failed To Queue events at the scheduledTime given", async () => {
    const org = await createTestOrganization(context);
    const later = new Date(Date.now() + 60 * 60_000).toISOString();
    for (const status of ["Failed To Send", "Failed To Queue"] as const) {
      const original = await storedEvent(org, status);
      const response = await replay(org, original, { scheduledTime: later });
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ status: "Pending", scheduledTime: later, replayOf: original });
    }
  });

  it("refuses Pending, Queued and Cancelled events with 400 and creates nothing", async () => {
    const org = await createTestOrganization(context);
    const ids = [
      await storedEvent(org, "Pending"),
      await storedEvent(org, "Queued"),
      await storedEvent(org, "Cancelled"),
    ];
    const count = await eventCount(org.orgId);
    const usageBefore = await usage(org.orgId);
    for (const id of ids) {
      const response = await replay(org, id);
      expect({ status: response.status, body: response.body }).toEqual({
        status: 400,
        body: { message: ONLY_SENT_OR_FAILED },
      });
    }
    expect(await eventCount(org.orgId)).toBe(count);
    expect(await usage(org.orgId)).toBe(usageBefore);
  });

  it("answers 404 for another organization's event, a missing one and one past the search window", async () => {
    const [org, other] = [await createTestOrganization(context), await createTestOrganization(context)];
    const theirs = await storedEvent(other, "Failed To Send");
    const old = await storedEvent(org, "Failed To Send", { minutesAgo: 8 * 24 * 60 });
    for (const id of [theirs, old, "evt_missing", "evt_\u0000"]) {
      const response = await replay(org, encodeURIComponent(id));
      expect({ status: response.status, body: response.body }).toEqual({
        status: 404,
        body: { message: "Unable to find event" },
      });
    }
    expect(await eventCount(org.orgId)).toBe(1);
    expect(await eventCount(other.orgId)).toBe(1);
  });

  it("refuses a time in the past or without a zone, and unknown fields", async () => {
    const org = await createTestOrganization(context);
    const original = await storedEvent(org, "Sent");
    const cases: [object, string][] = [
      [
        { scheduledTime: new Date(Date.now() - 60_000).toISOString() },
        "Please make sure your scheduled time is in the future",
      ],
      [
        { scheduledTime: "2030-01-01T10:00:00" },
        "'scheduledTime' must include a time zone, e.g. 2026-12-01T10:00:00Z or 2026-12-01T10:00:00+02:00",
      ],
      [{ payload: "{}" }, "Unknown field 'payload'"],
    ];
    for (const [body, message] of cases) {
      const response = await replay(org, original, body);
      expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
    }
    expect(await eventCount(org.orgId)).toBe(1);
  });

  it("counts against the monthly limit: 403 once the month is full, and nothing is created", async () => {
    const limit = 3;
    const limited = createApp({ ...api.deps, config: { ...context.config, MAX_EVENTS_PER_MONTH: limit } });
    const org = await createTestOrganization(context);
    // This month's units all taken.
    const original = await storedEvent(org, "Failed To Send");
    const month = new Date();
    await context.db.$executeRaw`
      INSERT INTO event_monthly_usage (org_id, month, count)
      VALUES (${org.orgId}, date_trunc('month', ${month}::timestamptz AT TIME ZONE 'UTC')::date, ${limit})
      ON CONFLICT (org_id, month) DO UPDATE SET count = ${limit}`;
    const usageBefore = await usage(org.orgId);

    const response = await request(limited).post(`/api/events/${original}/replay`).set("x-api-key", org.apiKey);

    expect({ status: response.status, body: response.body }).toEqual({
      status: 403,
      body: { message: `Monthly limit of ${limit} scheduled events reached for this organization` },
    });
    expect(await eventCount(org.orgId)).toBe(1);
    expect(await usage(org.orgId)).toBe(usageBefore);
  });
});

describe("POST /api/events/replay", () => {
  it("replays only this organization's visible failed events not replayed yet, oldest first, and answers the new ids", async () => {
    const [org, other] = [await createTestOrganization(context), await createTestOrganization(context)];
    const newest = await storedEvent(org, "Failed To Send", { minutesAgo: 5 });
    const oldest = await storedEvent(org, "Failed To Queue", { minutesAgo: 30 });
    const middle = await storedEvent(org, "Failed To Send", { minutesAgo: 20 });
    await storedEvent(org, "Sent");
    await storedEvent(org, "Pending");
    await storedEvent(org, "Failed To Send", { minutesAgo: 8 * 24 * 60 });
    await storedEvent(other, "Failed To Send");
    const otherCount = await eventCount(other.orgId);

    const response = await bulk(org, { status: "Failed To Send,Failed To Queue" });

    expect(response.status).toBe(200);
    expect(response.body.replayed).toBe(3);
    expect(response.body.events).toHaveLength(3);
    const replays = await Promise.all(
      (response.body.events as string[]).map((id) => context.db.event.findUniqueOrThrow({ where: { id } })),
    );
    expect(replays.map((event) => event.replayOf)).toEqual([oldest, middle, newest]);
    expect(replays.every((event) => event.status === "Pending" && event.orgId === org.orgId)).toBe(true);
    for (const event of replays) expect(await api.queue.getJob(eventJobId(event.id))).toBeDefined();
    expect(await eventCount(other.orgId)).toBe(otherCount);

    // Done once: a repeat finds nothing left to replay.
    const again = await bulk(org, { status: "Failed To Send,Failed To Queue" });
    expect(again.body).toEqual({ replayed: 0, events: [] });
  });

  it("applies the list filters: one status, and a failedAt window", async () => {
    const org = await createTestOrganization(context);
    const recent = await storedEvent(org, "Failed To Send", { minutesAgo: 5 });
    await storedEvent(org, "Failed To Send", { minutesAgo: 120 });
    await storedEvent(org, "Failed To Queue", { minutesAgo: 5 });

    const response = await bulk(org, {
      status: "Failed To Send",
      failedAtStartDate: new Date(Date.now() - 60 * 60_000).toISOString(),
    });

    expect(response.status).toBe(200);
    expect(response.body.replayed).toBe(1);
    const [replayed] = response.body.events as string[];
    expect((await context.db.event.findUniqueOrThrow({ where: { id: replayed ?? "" } })).replayOf).toBe(recent);
  });

  it("replays at most 1000 events, the oldest ones", async () => {
    const roomy = createApp({ ...api.deps, config: { ...context.config, MAX_EVENTS_PER_MONTH: 5000 } });
    const org = await createTestOrganization(context);
    // 1005 failed events a minute apart, written in one statement.
    await context.db.$executeRaw`
      INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, failed_at, created_at, updated_at)
      SELECT 'evt_bulk_' || lpad(n::text, 4, '0'), ${org.orgId}, ${DESTINATION}, '{}',
        now() - make_interval(mins => 2000 - n), 'Failed To Send', now() - make_interval(mins => 2000 - n), now(), now()
      FROM generate_series(1, 1005) AS n`;

    const response = await bulk(org, { status: "Failed To Send" }, roomy);

    expect(response.status).toBe(200);
    expect(response.body.replayed).toBe(1000);
    const rows = await context.db.$queryRaw<{ replay_of: string }[]>`
      SELECT replay_of FROM events WHERE org_id = ${org.orgId} AND replay_of IS NOT NULL ORDER BY replay_of`;
    expect(rows.map((row) => row.replay_of)).toEqual(
      Array.from({ length: 1000 }, (_, n) => `evt_bulk_${String(n + 1).padStart(4, "0")}`),
    );
    expect(await usage(org.orgId)).toBe(1000);
  }, 30_000);

  it("makes none of the replays when the month has too few units left for all of them (403)", async () => {
    const limit = 4;
    const limited = createApp({ ...api.deps, config: { ...context.config, MAX_EVENTS_PER_MONTH: limit } });
    const org = await createTestOrganization(context);
    for (let n = 0; n < 3; n++) await storedEvent(org, "Failed To Send");
    await context.db.$executeRaw`
      INSERT INTO event_monthly_usage (org_id, month, count)
      VALUES (${org.orgId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, ${limit - 2})
      ON CONFLICT (org_id, month) DO UPDATE SET count = ${limit - 2}`;
    const usageBefore = await usage(org.orgId);

    const response = await bulk(org, { status: "Failed To Send" }, limited);

    expect({ status: response.status, body: response.body }).toEqual({
      status: 403,
      body: { message: `Monthly limit of ${limit} scheduled events reached for this organization` },
    });
    expect(await eventCount(org.orgId)).toBe(3);
    expect(await usage(org.orgId)).toBe(usageBefore);
  });

  it("replays each event once when two bulk replays run at the same time", async () => {
    const org = await createTestOrganization(context);
    for (let n = 0; n < 5; n++) await storedEvent(org, "Failed To Queue", { minutesAgo: n + 1 });

    const answers = await Promise.all([
      bulk(org, { status: "Failed To Queue" }),
      bulk(org, { status: "Failed To Queue" }),
    ]);

    expect(answers.map((answer) => answer.status)).toEqual([200, 200]);
    expect(answers.map((answer) => answer.body.replayed as number).sort()).toEqual([0, 5]);
    expect(await context.db.event.count({ where: { orgId: org.orgId, replayOf: { not: null } } })).toBe(5);
  });

  it("refuses a missing or non-failed status, bad dates and unknown fields", async () => {
    const org = await createTestOrganization(context);
    const statusRule = "'status' must be 'Failed To Send' or 'Failed To Queue' (or both, separated by a comma)";
    const cases: [object, string][] = [
      [{}, "'status' is required"],
      [{ status: "Sent" }, statusRule],
      [{ status: "Failed To Send,Pending" }, statusRule],
      [{ status: "Failed To Send", failedAtStartDate: "yesterday" }, "Invalid date: failedAtStartDate"],
      [
        { status: "Failed To Send", failedAtStartDate: new Date(Date.now() - 30 * DAY_MS).toISOString() },
        "failedAtStartDate is outside of the searchable range",
      ],
      [{ status: "Failed To Send", limit: 5 }, "Unknown field 'limit'"],
    ];
    for (const [body, message] of cases) {
      const response = await bulk(org, body);
      expect({ status: response.status, body: response.body }).toEqual({ status: 400, body: { message } });
    }
  });
});
