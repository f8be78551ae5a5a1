import type { EventJobData, EventQueue } from "@punctual/core";
import type { Queue } from "bullmq";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import type { ApiDeps } from "../src/app.ts";
import { createApp } from "../src/app.ts";

// Labels on events and cron jobs, the flowKey and label filters of GET /api/events, the all-or-nothing
// batch create and the bulk cancel (contract §10.5), through the HTTP API on a real Postgres and a
// real delayed queue.

const LIMIT = 1_200;
const MINUTE_MS = 60_000;

let context: TestContext;
let deps: ApiDeps;
let queue: Queue<EventJobData>;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: String(LIMIT) });
  ({ deps, queue } = createTestApiDeps(context));
  app = createApp(deps);
});
afterAll(async () => {
  await context.close();
});

/** A create body due in `minutes` (inside the 1 h enqueue horizon by default). */
const body = (extra: Record<string, unknown> = {}, minutes = 30) => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(Date.now() + minutes * MINUTE_MS).toISOString(),
  ...extra,
});
const create = (org: TestOrganization, extra: Record<string, unknown> = {}) =>
  request(app).post("/api/events").set("x-api-key", org.apiKey).send(body(extra));
const list = (org: TestOrganization, query: string) =>
  request(app).get(`/api/events?${query}`).set("x-api-key", org.apiKey);
const batch = (org: TestOrganization, events: unknown[]) =>
  request(app).post("/api/events/batch").set("x-api-key", org.apiKey).send({ events });
const cancel = (org: TestOrganization, filters: Record<string, unknown>) =>
  request(app).post("/api/events/cancel").set("x-api-key", org.apiKey).send(filters);
const eventCount = async (orgId: string) =>
  (await context.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM events WHERE org_id = ${orgId}`)[0]?.n;
const usage = async (orgId: string) =>
  (
    await context.db.$queryRaw<{ n: number }[]>`
    SELECT COALESCE(sum(count), 0)::int AS n FROM event_monthly_usage WHERE org_id = ${orgId}`
  )[0]?.n;

describe("labels", () => {
  it.each([
    [["a"], "'labels' must be an object of label keys to string values"],
    [null, "'labels' must be an object of label keys to string values"],
    [Object.fromEntries(Array.from({ length: 11 }, (_, n) => [`k${n}`, "v"])), "'labels' may hold at most 10 labels"],
    [{ Team: "a" }, "Label key 'Team' must be 1 to 64 characters of lower-case letters, digits, '.', '_' or '-'"],
    [
      { ["k".repeat(65)]: "a" },
      `Label key '${"k".repeat(65)}' must be 1 to 64 characters of lower-case letters, digits, '.', '_' or '-'`,
    ],
    [{ "": "a" }, "Label key '' must be 1 to 64 characters of lower-case letters, digits, '.', '_' or '-'"],
    [{ team: 7 }, "Label 'team' must have a string value"],
    [{ team: "x".repeat(257) }, "Label 'team' must have a value of at most 256 characters"],
  ])("refuses labels %j on create with one sentence, creating nothing", async (labels, message) => {
    const org = await createTestOrganization(context);
    const response = await create(org, { labels });
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message });
    expect(await eventCount(org.orgId)).toBe(0);
  });

  it("accepts 10 labels with 64-character keys and 256-character values", async () => {
    const org = await createTestOrganization(context);
    const labels = Object.fromEntries(Array.from({ length: 10 }, (_, n) => [`${n}`.padEnd(64, "k"), "v".repeat(256)]));
    const response = await create(org, { labels });
    expect(response.status).toBe(200);
    expect(response.body.labels).toEqual(labels);
  });

  it("keeps labels through create, get, list and edit; null clears them; an event without any shows {}", async () => {
    const org = await createTestOrganization(context);
    const created = await create(org, { labels: { customer: "42", "team.name": "billing" } });
    expect(created.status).toBe(200);
    const id: string = created.body.id;
    expect(created.body.labels).toEqual({ customer: "42", "team.name": "billing" });
    const got = await request(app).get(`/api/events/${id}`).set("x-api-key", org.apiKey);
    expect(got.body.labels).toEqual({ customer: "42", "team.name": "billing" });
    expect((await list(org, "")).body.map((event: { labels: unknown }) => event.labels)).toEqual([
      { customer: "42", "team.name": "billing" },
    ]);

    const edit = (change: Record<string, unknown>) =>
      request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey).send(change);
    expect((await edit({ payload: "other" })).body.labels).toEqual({ customer: "42", "team.name": "billing" });
    const replaced = await edit({ labels: { customer: "43" } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.labels).toEqual({ customer: "43" });
    expect((await edit({ labels: { Bad: "x" } })).body).toEqual({
      message: "Label key 'Bad' must be 1 to 64 characters of lower-case letters, digits, '.', '_' or '-'",
    });
    const cleared = await edit({ labels: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.labels).toEqual({});
    expect((await request(app).get(`/api/events/${id}`).set("x-api-key", org.apiKey)).body.labels).toEqual({});
    expect((await create(org)).body.labels).toEqual({});
  });

  it("keeps an event's labels in its replay", async () => {
    const org = await createTestOrganization(context);
    const created = await create(org, { labels: { customer: "42" } });
    const at = new Date(Date.now() - 60_000);
    await context.db.$executeRaw`
      UPDATE events SET status = 'Failed To Send', scheduled_time = ${at}, failed_at = ${at} WHERE id = ${created.body.id}`;
    const replay = await request(app).post(`/api/events/${created.body.id}/replay`).set("x-api-key", org.apiKey);
    expect(replay.status).toBe(200);
    expect(replay.body.labels).toEqual({ customer: "42" });
  });

  it("makes labels part of an Idempotency-Key's request: other labels with the same key are refused (422)", async () => {
    const org = await createTestOrganization(context);
    const same = body({ labels: { b: "2", a: "1" } });
    const send = (payload: Record<string, unknown>) =>
      request(app).post("/api/events").set("x-api-key", org.apiKey).set("Idempotency-Key", "k1").send(payload);
    const first = await send(same);
    expect(first.status).toBe(200);
    // The same labels in another order are the same request.
    const repeat = await send({ ...same, labels: { a: "1", b: "2" } });
    expect(repeat.status).toBe(200);
    expect(repeat.body.id).toBe(first.body.id);
    const other = await send({ ...same, labels: { a: "1", b: "3" } });
    expect(other.status).toBe(422);
    expect(await eventCount(org.orgId)).toBe(1);
  });

  it("keeps labels on cron jobs: create, get, list, edit, null clears; refused like events'", async () => {
    const org = await createTestOrganization(context);
    const cron = { payload: "{}", destination: "https://example.com/hook", expression: "0 * * * *" };
    const refused = await request(app)
      .post("/api/cronjobs")
      .set("x-api-key", org.apiKey)
      .send({ ...cron, labels: { team: 1 } });
    expect(refused.body).toEqual({ message: "Label 'team' must have a string value" });
    const created = await request(app)
      .post("/api/cronjobs")
      .set("x-api-key", org.apiKey)
      .send({ ...cron, labels: { team: "billing" } });
    expect(created.status).toBe(200);
    expect(created.body.labels).toEqual({ team: "billing" });
    const id: string = created.body.id;
    expect((await request(app).get(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey)).body.labels).toEqual({
      team: "billing",
    });
    expect((await request(app).get("/api/cronjobs").set("x-api-key", org.apiKey)).body[0].labels).toEqual({
      team: "billing",
    });
    const edited = await request(app)
      .put(`/api/cronjobs/${id}`)
      .set("x-api-key", org.apiKey)
      .send({ labels: { team: "ops" } });
    expect(edited.body.labels).toEqual({ team: "ops" });
    const cleared = await request(app).put(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey).send({ labels: null });
    expect(cleared.status).toBe(200);
    expect(cleared.body.labels).toEqual({});
  });
});

describe("the label and flowKey filters of GET /api/events", () => {
  it("lists only events carrying every label asked for, or of the flow asked for", async () => {
    const org = await createTestOrganization(context);
    const a = (await create(org, { labels: { customer: "42", tier: "gold" }, flowKey: "f1" })).body.id;
    const b = (await create(org, { labels: { customer: "42", tier: "free" } })).body.id;
    const c = (await create(org, { labels: { customer: "43", tier: "gold" }, flowKey: "f1" })).body.id;
    await create(org, { flowKey: "f2" });
    // Another organization's event with the same label is never listed.
    await create(await createTestOrganization(context), { labels: { customer: "42" } });
    const ids = async (query: string) => {
      const response = await list(org, query);
      expect(response.status).toBe(200);
      return (response.body as { id: string }[]).map((event) => event.id).sort();
    };
    expect(await ids("label=customer:42")).toEqual([a, b].sort());
    expect(await ids("label=customer:42&label=tier:gold")).toEqual([a]);
    expect(await ids("label=tier:gold")).toEqual([a, c].sort());
    expect(await ids("label=customer:42&label=customer:43")).toEqual([]);
    expect(await ids("flowKey=f1")).toEqual([a, c].sort());
    expect(await ids("flowKey=f1&label=customer:43")).toEqual([c]);
    expect(await ids("label=customer:99")).toEqual([]);
  });

  it("takes everything after the first colon as the value", async () => {
    const org = await createTestOrganization(context);
    const id = (await create(org, { labels: { url: "https://x.test:8443/a" } })).body.id;
    const response = await list(org, `label=${encodeURIComponent("url:https://x.test:8443/a")}`);
    expect(response.body.map((event: { id: string }) => event.id)).toEqual([id]);
  });

  it.each([
    ["label=customer", "'label' must be written key:value, e.g. label=customer:42"],
    ["label=Customer:42", "'label' must be written key:value, e.g. label=customer:42"],
    ["flowKey=a%20b", "'flowKey' must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-'"],
    [Array.from({ length: 11 }, (_, n) => `label=k${n}:v`).join("&"), "At most 10 'label' filters can be given"],
  ])("refuses %s with one sentence", async (query, message) => {
    const org = await createTestOrganization(context);
    const response = await list(org, query);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message });
  });
});

describe("POST /api/events/batch", () => {
  it("creates nothing when one item is invalid, and names that item by its index from 0", async () => {
    const org = await createTestOrganization(context);
    const items = [body(), body(), body({ scheduledTime: "2001-01-01T00:00:00Z" }), body()];
    const response = await batch(org, items);
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: "Event 2: Please make sure your scheduled time is in the future" });
    const unknown = await batch(org, [body(), { ...body(), payloadd: "x" }]);
    expect(unknown.body).toEqual({ message: "Event 1: Unknown field 'payloadd'" });
    const labels = await batch(org, [body({ labels: { A: "x" } })]);
    expect(labels.body).toEqual({
      message: "Event 0: Label key 'A' must be 1 to 64 characters of lower-case letters, digits, '.', '_' or '-'",
    });
    expect(await eventCount(org.orgId)).toBe(0);
    expect(await usage(org.orgId)).toBe(0);
  });

  it("refuses more than 1000 items, a missing list and an Idempotency-Key", async () => {
    const org = await createTestOrganization(context);
    const tooMany = await batch(
      org,
      Array.from({ length: 1001 }, () => body()),
    );
    expect(tooMany.status).toBe(400);
    expect(tooMany.body).toEqual({ message: "'events' may hold at most 1000 events" });
    const missing = await request(app).post("/api/events/batch").set("x-api-key", org.apiKey).send({});
    expect(missing.body).toEqual({ message: "'events' is required" });
    const keyed = await request(app)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .set("Idempotency-Key", "k")
      .send({ events: [body()] });
    expect(keyed.status).toBe(400);
    expect(keyed.body).toEqual({ message: "Idempotency-Key is not accepted by POST /api/events/batch" });
    expect(await eventCount(org.orgId)).toBe(0);
  });

  it("creates 1000 events in the order given, each Pending with its delayed job", async () => {
    const org = await createTestOrganization(context);
    const base = Date.now() + 20 * MINUTE_MS;
    // Times out of order, so the answer's order can only be the request's.
    const items = Array.from({ length: 1000 }, (_, n) => ({
      payload: JSON.stringify({ n }),
      destination: "https://example.com/hook",
      scheduledTime: new Date(base + ((n * 7919) % 1000) * 1000).toISOString(),
      labels: { n: String(n) },
    }));
    const response = await batch(org, items);
    expect(response.status).toBe(200);
    const events = response.body.events as { id: string; payload: string; status: string; labels: unknown }[];
    expect(events.map((event) => event.payload)).toEqual(items.map((item) => item.payload));
    expect(events.map((event) => event.labels)).toEqual(items.map((item) => item.labels));
    expect(new Set(events.map((event) => event.status))).toEqual(new Set(["Pending"]));
    expect(await eventCount(org.orgId)).toBe(1000);
    expect(await usage(org.orgId)).toBe(1000);
    const jobs = await Promise.all(events.map((event) => queue.getJob(`event-${event.id}`)));
    expect(jobs.filter((job) => job?.data.eventId !== undefined)).toHaveLength(1000);
  });

  it("creates nothing, and answers 403, when the month has too few units left for the whole batch", async () => {
    const org = await createTestOrganization(context);
    const month = new Date(Date.now() + 30 * MINUTE_MS);
    const first = `${month.getUTCFullYear()}-${String(month.getUTCMonth() + 1).padStart(2, "0")}-01`;
    await context.db.$executeRaw`
      INSERT INTO event_monthly_usage (org_id, month, count) VALUES (${org.orgId}, ${first}::date, ${LIMIT - 5})`;
    const response = await batch(
      org,
      Array.from({ length: 6 }, () => body()),
    );
    expect(response.status).toBe(403);
    expect(response.body).toEqual({
      message: `Monthly limit of ${LIMIT} scheduled events reached for this organization`,
    });
    expect(await eventCount(org.orgId)).toBe(0);
    expect(await usage(org.orgId)).toBe(LIMIT - 5);
    // Five still fit.
    expect(
      (
        await batch(
          org,
          Array.from({ length: 5 }, () => body()),
        )
      ).status,
    ).toBe(200);
  });

  it("commits the events when the queue is unreachable: 200, all Pending, none with a job", async () => {
    const org = await createTestOrganization(context);
    const down = () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
    const failing: EventQueue = { schedule: down, scheduleMany: down, unschedule: down, announceChange: down };
    const response = await request(createApp({ ...deps, eventQueue: failing }))
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({ events: [body(), body()] });
    expect(response.status).toBe(200);
    for (const event of response.body.events as { id: string }[]) {
      expect(await queue.getJob(`event-${event.id}`)).toBeUndefined();
    }
    const rows = await context.db.$queryRaw<
      { status: string }[]
    >`SELECT status FROM events WHERE org_id = ${org.orgId}`;
    expect(rows.map((row) => row.status)).toEqual(["Pending", "Pending"]);
  });
});

describe("POST /api/events/cancel", () => {
  it("cancels exactly the 4 labelled events of 6, removes their jobs and gives their quota back", async () => {
    const org = await createTestOrganization(context);
    const labelled = await Promise.all(
      Array.from({ length: 4 }, async () => (await create(org, { labels: { campaign: "spring" } })).body.id as string),
    );
    const others = [
      (await create(org, { labels: { campaign: "autumn" } })).body.id as string,
      (await create(org)).body.id as string,
    ];
    for (const id of [...labelled, ...others]) expect(await queue.getJob(`event-${id}`)).toBeDefined();

    const response = await cancel(org, { label: "campaign:spring" });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ cancelled: 4 });
    const statuses = await context.db.$queryRaw<{ id: string; status: string }[]>`
      SELECT id, status FROM events WHERE org_id = ${org.orgId}`;
    const statusOf = new Map(statuses.map((row) => [row.id, row.status]));
    for (const id of labelled) {
      expect(statusOf.get(id)).toBe("Cancelled");
      expect(await queue.getJob(`event-${id}`)).toBeUndefined();
    }
    for (const id of others) {
      expect(statusOf.get(id)).toBe("Pending");
      expect(await queue.getJob(`event-${id}`)).toBeDefined();
    }
    expect(await usage(org.orgId)).toBe(2);
    // Nothing Pending matches any more.
    expect((await cancel(org, { label: ["campaign:spring"] })).body).toEqual({ cancelled: 0 });
  });

  it("cancels by flowKey, and not another organization's events", async () => {
    const org = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    const mine = (await create(org, { flowKey: "nightly" })).body.id;
    const theirs = (await create(other, { flowKey: "nightly" })).body.id;
    expect((await cancel(org, { flowKey: "nightly" })).body).toEqual({ cancelled: 1 });
    const rows = await context.db.$queryRaw<{ id: string; status: string }[]>`
      SELECT id, status FROM events WHERE id IN (${mine}, ${theirs}) ORDER BY id`;
    expect(Object.fromEntries(rows.map((row) => [row.id, row.status]))).toEqual({
      [mine]: "Cancelled",
      [theirs]: "Pending",
    });
  });

  it("answers { cancelled: 0 } for a filter that matches nothing, and refuses a request with no filter", async () => {
    const org = await createTestOrganization(context);
    const id = (await create(org)).body.id;
    expect((await cancel(org, { label: "nobody:here" })).body).toEqual({ cancelled: 0 });
    const none = await cancel(org, {});
    expect(none.status).toBe(400);
    expect(none.body).toEqual({
      message: "At least one filter is required; to cancel every pending event, give 'status': 'Pending'",
    });
    expect((await cancel(org, { label: [] })).status).toBe(400);
    expect((await cancel(org, { labels: "a:b" })).body).toEqual({ message: "Unknown field 'labels'" });
    expect(await context.db.event.findUnique({ where: { id }, select: { status: true } })).toEqual({
      status: "Pending",
    });
    expect((await cancel(org, { status: "Pending" })).body).toEqual({ cancelled: 1 });
  });
});
