import {
  createEvent,
  createEventBatch,
  createEventCreator,
  MonthlyLimitReached,
  quotaMonth,
  replayEvent,
  replayFailedEvents,
  systemClock,
  updatePendingEvent,
} from "@punctual/core";
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

// Quota notices of every change that takes quota units: batches (each month they touch, and the
// months a refused batch was short of), replays (one and bulk) and edits into another month, each
// written in the change's own statement, so it exists exactly when the change commits. The API
// runs on a real Postgres; no worker runs here, so each notice stays the row the change wrote
// (outcomes.test.ts delivers such rows to a receiver). An organization may schedule 10 events a
// month: `quota.warning` at 8, `quota.reached` at 10. A month's usage is set straight in its row.

const MONTHLY_LIMIT = 10;
const DESTINATION = "https://example.com/d";
const HOOK = "https://example.com/hooks";

let context: TestContext;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: String(MONTHLY_LIMIT) });
  app = createApp(createTestApiDeps(context, systemClock).deps);
});
afterAll(() => context?.close());

/** Noon on the 10th of the UTC month `months` after this one (always within the year ahead). */
function monthAhead(months: number): Date {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + months, 10, 12));
}

const label = (at: Date) => quotaMonth(at).slice(0, 7);

async function setUsage(org: TestOrganization, at: Date, count: number): Promise<void> {
  await context.db.$executeRaw`
    INSERT INTO event_monthly_usage (org_id, month, count) VALUES (${org.orgId}, ${quotaMonth(at)}::date, ${count})
    ON CONFLICT (org_id, month) DO UPDATE SET count = EXCLUDED.count`;
}

async function usageOf(org: TestOrganization, at: Date): Promise<number | undefined> {
  const [row] = await context.db.$queryRaw<{ count: number }[]>`
    SELECT count FROM event_monthly_usage WHERE org_id = ${org.orgId} AND month = ${quotaMonth(at)}::date`;
  return row?.count;
}

/** An organization with one webhook asking for both quota notices. */
async function watchedOrganization(): Promise<TestOrganization> {
  const org = await createTestOrganization(context);
  const hook = await request(app)
    .post("/api/webhooks")
    .set("x-api-key", org.apiKey)
    .send({ url: HOOK, types: ["quota.warning", "quota.reached"] });
  expect(hook.status, JSON.stringify(hook.body)).toBe(200);
  return org;
}

/** The organization's notices written so far, as `type month used`, sorted. */
async function notices(org: TestOrganization): Promise<string[]> {
  const rows = await context.db.notification.findMany({ where: { orgId: org.orgId } });
  return rows
    .map((row) => {
      const data = JSON.parse(row.data) as { month: string; used: number; limit: number };
      expect(data.limit).toBe(MONTHLY_LIMIT);
      expect(row.url).toBe(HOOK);
      return `${row.type} ${data.month} ${data.used}`;
    })
    .sort();
}

const event = (at: Date, extra: Record<string, unknown> = {}) => ({
  payload: "{}",
  destination: DESTINATION,
  scheduledTime: at.toISOString(),
  ...extra,
});

/** An event of `org` created through the API, then left Sent or Failed To Send ten minutes ago. */
async function endedEvent(org: TestOrganization, status: "Sent" | "Failed To Send"): Promise<string> {
  const created = await request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send(event(monthAhead(6)));
  expect(created.status).toBe(200);
  const at = new Date(Date.now() - 10 * 60_000);
  await context.db.$executeRaw`
    UPDATE events SET status = ${status}, scheduled_time = ${at},
      sent_at = ${status === "Sent" ? at : null}, failed_at = ${status === "Sent" ? null : at}
    WHERE id = ${created.body.id}`;
  return created.body.id;
}

describe("POST /api/events/batch", () => {
  it("writes quota.warning and quota.reached for each month the batch took units of", async () => {
    const org = await watchedOrganization();
    const [first, second, untouched] = [monthAhead(2), monthAhead(3), monthAhead(4)];
    await setUsage(org, first, 7);
    await setUsage(org, second, 8);
    await setUsage(org, untouched, 9);
    const batch = await request(app)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({ events: [event(first), event(second), event(second)] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(await notices(org)).toEqual(
      [
        `quota.reached ${label(second)} 10`,
        `quota.warning ${label(first)} 8`,
        `quota.warning ${label(second)} 10`,
      ].sort(),
    );
  });

  it("refused with 403 for the quota, writes quota.reached for the months it was short of, not for those that fit", async () => {
    const org = await watchedOrganization();
    const [short, fits] = [monthAhead(2), monthAhead(3)];
    await setUsage(org, short, 9);
    // This month had room for its event (7 + 1 of 10): no notice of it may be written.
    await setUsage(org, fits, 7);
    const batch = await request(app)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({ events: [event(fits), event(short), event(short)] });
    expect(batch.status).toBe(403);
    expect(batch.body).toEqual({
      message: `Monthly limit of ${MONTHLY_LIMIT} scheduled events reached for this organization`,
    });
    expect(await context.db.event.count({ where: { orgId: org.orgId } })).toBe(0);
    // The short month's usage is what it was (nothing of the batch stayed): 9, past the warning too.
    expect(await notices(org)).toEqual([`quota.reached ${label(short)} 9`, `quota.warning ${label(short)} 9`]);
  });

  it("writes no quota notice for an organization without a webhook asking for them", async () => {
    const org = await createTestOrganization(context);
    const other = await request(app)
      .post("/api/webhooks")
      .set("x-api-key", org.apiKey)
      .send({ url: HOOK, types: ["event.failed"] });
    expect(other.status).toBe(200);
    await setUsage(org, monthAhead(2), 9);
    const batch = await request(app)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({ events: [event(monthAhead(2))] });
    expect(batch.status).toBe(200);
    expect(await context.db.notification.count({ where: { orgId: org.orgId } })).toBe(0);
  });

  it("keeps an item's callbackUrl as the event's callbackUrl, out of its delivery policy", async () => {
    const org = await createTestOrganization(context);
    const batch = await request(app)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({ events: [event(monthAhead(2), { callbackUrl: "https://example.com/c" }), event(monthAhead(2))] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(batch.body.events.map((e: { callbackUrl: string | null }) => e.callbackUrl)).toEqual([
      "https://example.com/c",
      null,
    ]);
    const [row] = await context.db.$queryRaw<{ callback_url: string | null; delivery_policy: unknown }[]>`
      SELECT callback_url, delivery_policy FROM events WHERE id = ${batch.body.events[0].id}`;
    expect(row).toEqual({ callback_url: "https://example.com/c", delivery_policy: null });
  });
});

describe("replays", () => {
  it("a replay into a month writes quota.warning as it takes the unit, and quota.reached when refused for the quota", async () => {
    const org = await watchedOrganization();
    const original = await endedEvent(org, "Sent");
    const [warned, full] = [monthAhead(2), monthAhead(3)];
    await setUsage(org, warned, 7);
    await setUsage(org, full, MONTHLY_LIMIT);
    const replay = await request(app)
      .post(`/api/events/${original}/replay`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: warned.toISOString() });
    expect(replay.status, JSON.stringify(replay.body)).toBe(200);
    expect(await notices(org)).toEqual([`quota.warning ${label(warned)} 8`]);

    const refused = await request(app)
      .post(`/api/events/${original}/replay`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: full.toISOString() });
    expect(refused.status).toBe(403);
    expect(await notices(org)).toEqual(
      [
        `quota.reached ${label(full)} ${MONTHLY_LIMIT}`,
        `quota.warning ${label(full)} ${MONTHLY_LIMIT}`,
        `quota.warning ${label(warned)} 8`,
      ].sort(),
    );
  });

  it("a bulk replay writes the notices of the month it took units of, and quota.reached when refused for the quota", async () => {
    const org = await watchedOrganization();
    await endedEvent(org, "Failed To Send");
    await endedEvent(org, "Failed To Send");
    // The replays are due now: the current month's units (read again below, in case it just turned).
    await setUsage(org, new Date(), 6);
    const bulk = await request(app)
      .post("/api/events/replay")
      .set("x-api-key", org.apiKey)
      .send({ status: "Failed To Send" });
    expect(bulk.status, JSON.stringify(bulk.body)).toBe(200);
    expect(bulk.body.replayed).toBe(2);
    const [replay] = await context.db.event.findMany({ where: { id: bulk.body.events[0] } });
    const month = new Date(replay?.scheduledTime ?? 0);
    expect(await notices(org)).toEqual([`quota.warning ${label(month)} 8`]);

    await endedEvent(org, "Failed To Send");
    await setUsage(org, month, MONTHLY_LIMIT);
    const refused = await request(app)
      .post("/api/events/replay")
      .set("x-api-key", org.apiKey)
      .send({ status: "Failed To Send" });
    expect(refused.status).toBe(403);
    expect(await notices(org)).toEqual([
      `quota.reached ${label(month)} ${MONTHLY_LIMIT}`,
      `quota.warning ${label(month)} 8`,
    ]);
  });
});

describe("edits", () => {
  it("moving an event into another month writes that month's notices, and quota.reached when refused for the quota", async () => {
    const org = await watchedOrganization();
    const created = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send(event(monthAhead(2)));
    expect(created.status).toBe(200);
    const [warned, full] = [monthAhead(3), monthAhead(4)];
    await setUsage(org, warned, 7);
    await setUsage(org, full, MONTHLY_LIMIT);
    const moved = await request(app)
      .put(`/api/events/${created.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: warned.toISOString() });
    expect(moved.status, JSON.stringify(moved.body)).toBe(200);
    expect(await notices(org)).toEqual([`quota.warning ${label(warned)} 8`]);

    const refused = await request(app)
      .put(`/api/events/${created.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: full.toISOString() });
    expect(refused.status).toBe(403);
    expect(await notices(org)).toEqual(
      [
        `quota.reached ${label(full)} ${MONTHLY_LIMIT}`,
        `quota.warning ${label(full)} ${MONTHLY_LIMIT}`,
        `quota.warning ${label(warned)} 8`,
      ].sort(),
    );
  });
});

describe("a quota notice and the change that took the units", () => {
  // This file's database refuses to write an event with this payload (a trigger raising an error):
  // a change carrying it fails after its statement or transaction has taken the quota unit.
  const FAIL = "refused by the trigger of this test";

  beforeAll(async () => {
    await context.db.$executeRawUnsafe(
      "CREATE FUNCTION fail_event_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'event write refused by the test'; END $$",
    );
    await context.db.$executeRawUnsafe(
      `CREATE TRIGGER fail_event_write BEFORE INSERT OR UPDATE ON events FOR EACH ROW WHEN (NEW.payload = '${FAIL}') EXECUTE FUNCTION fail_event_write()`,
    );
  });

  const input = (org: TestOrganization, at: Date, payload = "{}") => ({
    orgId: org.orgId,
    payload,
    destination: DESTINATION,
    scheduledTime: at,
  });

  it("a create that fails after taking its unit leaves neither; one that commits has its notice as it returns", async () => {
    const org = await watchedOrganization();
    const month = monthAhead(2);
    await setUsage(org, month, 7);
    const failed = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send(event(month, { payload: FAIL }));
    expect(failed.status).toBe(500);
    expect(await usageOf(org, month)).toBe(7);
    expect(await notices(org)).toEqual([]);

    // The change alone, without the API around it: once it has returned (committed), its notice is there.
    const { created } = await createEvent(context.db, input(org, month), new Date(), MONTHLY_LIMIT);
    expect(created).toBe(true);
    expect(await usageOf(org, month)).toBe(8);
    expect(await notices(org)).toEqual([`quota.warning ${label(month)} 8`]);
  });

  it("an edit into another month that fails after taking the unit leaves neither; one that commits has its notice", async () => {
    const org = await watchedOrganization();
    const [from, into] = [monthAhead(2), monthAhead(3)];
    const created = await request(app).post("/api/events").set("x-api-key", org.apiKey).send(event(from));
    expect(created.status).toBe(200);
    await setUsage(org, into, 7);
    // The unit of `into` is taken first in the edit's transaction, then writing the event fails.
    const failed = await request(app)
      .put(`/api/events/${created.body.id}`)
      .set("x-api-key", org.apiKey)
      .send({ scheduledTime: into.toISOString(), payload: FAIL });
    expect(failed.status).toBe(500);
    expect([await usageOf(org, from), await usageOf(org, into)]).toEqual([1, 7]);
    expect(await notices(org)).toEqual([]);

    await updatePendingEvent(
      context.db,
      org.orgId,
      created.body.id,
      { scheduledTime: into },
      new Date(),
      MONTHLY_LIMIT,
    );
    expect([await usageOf(org, from), await usageOf(org, into)]).toEqual([0, 8]);
    expect(await notices(org)).toEqual([`quota.warning ${label(into)} 8`]);
  });

  it("a batch rolled back after taking the units of a month that fitted leaves neither; one that commits has its notices", async () => {
    const org = await watchedOrganization();
    const [fits, short] = [monthAhead(2), monthAhead(3)];
    await setUsage(org, fits, 7);
    await setUsage(org, short, 9);
    // One statement takes the unit of `fits` (8: past the warning), then the batch is refused for `short`.
    const refused = await createEventBatch(
      context.db,
      [input(org, fits), input(org, short), input(org, short)],
      new Date(),
      MONTHLY_LIMIT,
    ).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(MonthlyLimitReached);
    expect([await usageOf(org, fits), await usageOf(org, short)]).toEqual([7, 9]);
    expect(await notices(org)).toEqual([]);

    await createEventBatch(context.db, [input(org, fits), input(org, short)], new Date(), MONTHLY_LIMIT);
    expect(await notices(org)).toEqual(
      [`quota.reached ${label(short)} 10`, `quota.warning ${label(fits)} 8`, `quota.warning ${label(short)} 10`].sort(),
    );
  });

  it("creates made together for two organizations, a replay and a bulk replay each have their notices as they return", async () => {
    const [first, second] = [await watchedOrganization(), await watchedOrganization()];
    const month = monthAhead(2);
    await setUsage(first, month, 7);
    await setUsage(second, month, 9);
    const creator = createEventCreator(context.db, MONTHLY_LIMIT);
    const now = new Date();
    await Promise.all([creator.create(input(first, month), now), creator.create(input(second, month), now)]);
    expect(await notices(first)).toEqual([`quota.warning ${label(month)} 8`]);
    expect(await notices(second)).toEqual([`quota.reached ${label(month)} 10`, `quota.warning ${label(month)} 10`]);

    const org = await watchedOrganization();
    const original = await endedEvent(org, "Failed To Send");
    // Replayed once below, the original is no longer selected by the bulk replay: these two are.
    await endedEvent(org, "Failed To Send");
    await endedEvent(org, "Failed To Send");
    const [once, bulk] = [monthAhead(3), monthAhead(4)];
    await setUsage(org, once, 7);
    await setUsage(org, bulk, 6);
    const window = { now: new Date(), searchWindowDays: context.config.SEARCH_WINDOW_DAYS };
    await replayEvent(context.db, { orgId: org.orgId, eventId: original, scheduledTime: once }, window, MONTHLY_LIMIT);
    expect(await notices(org)).toEqual([`quota.warning ${label(once)} 8`]);
    const replays = await replayFailedEvents(
      context.db,
      org.orgId,
      { statuses: ["Failed To Send"] },
      bulk,
      window,
      MONTHLY_LIMIT,
    );
    expect(replays).toHaveLength(2);
    expect(await notices(org)).toEqual([`quota.warning ${label(bulk)} 8`, `quota.warning ${label(once)} 8`].sort());
  });
});
