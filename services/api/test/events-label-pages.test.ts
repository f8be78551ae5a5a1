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

// GET /api/events?label=… pages through event_labels, the label rows Postgres keeps for every event
// (migration 20261201130000_event_list_indexes): its pages must be the list's order whatever wrote
// the events, and follow edits and deletions.

const MINUTE_MS = 60_000;

let context: TestContext;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext();
  app = createApp(createTestApiDeps(context).deps);
});
afterAll(async () => {
  await context.close();
});

const at = (minutes: number) => new Date(Date.now() + minutes * MINUTE_MS).toISOString();
const item = (minutes: number, labels?: Record<string, string>) => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: at(minutes),
  ...(labels ? { labels } : {}),
});
const batch = async (org: TestOrganization, events: unknown[]) => {
  const response = await request(app).post("/api/events/batch").set("x-api-key", org.apiKey).send({ events });
  expect(response.status).toBe(200);
  return (response.body as { events: { id: string; scheduledTime: string }[] }).events;
};
const edit = (org: TestOrganization, id: string, change: Record<string, unknown>) =>
  request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey).send(change);

/** Every page of the query, `limit` at a time, following X-Next-Cursor: the ids in the order listed. */
async function pages(org: TestOrganization, query: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const response = await request(app)
      .get(`/api/events?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`)
      .set("x-api-key", org.apiKey);
    expect(response.status).toBe(200);
    expect(response.body.length).toBeLessThanOrEqual(limit);
    ids.push(...(response.body as { id: string }[]).map((event) => event.id));
    cursor = response.headers["x-next-cursor"];
  } while (cursor !== undefined);
  return ids;
}

/** The events in the list's order: scheduledTime, then id. */
const inListOrder = (events: { id: string; scheduledTime: string }[]) =>
  [...events]
    .sort((a, b) => a.scheduledTime.localeCompare(b.scheduledTime) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((event) => event.id);

const labelRows = async (eventId: string) =>
  (
    await context.db.$queryRaw<{ n: number }[]>`SELECT count(*)::int AS n FROM event_labels WHERE event_id = ${eventId}`
  )[0]?.n;

describe("GET /api/events?label=…, page by page", () => {
  it("lists every labelled event once, in (scheduledTime, id) order across pages, and only those", async () => {
    const org = await createTestOrganization(context);
    // Created out of order, several sharing an instant (their order is then by id), among events
    // with another label, with none, and another organization's with the same label.
    const minutes = [50, 10, 30, 30, 30, 20, 40, 10, 45, 30, 15, 25, 35];
    const labelled = await batch(
      org,
      minutes.map((m, n) => item(m, n % 3 === 0 ? { campaign: "spring", tier: "gold" } : { campaign: "spring" })),
    );
    await batch(org, [item(30, { campaign: "autumn" }), item(30), item(12, { tier: "gold" })]);
    await batch(await createTestOrganization(context), [item(30, { campaign: "spring" })]);

    expect(await pages(org, "label=campaign:spring", 4)).toEqual(inListOrder(labelled));
    expect(await pages(org, "label=campaign:spring", 100)).toEqual(inListOrder(labelled));
    // Every label asked for must be carried, whichever is walked.
    const gold = labelled.filter((_, n) => n % 3 === 0);
    expect(await pages(org, "label=campaign:spring&label=tier:gold", 2)).toEqual(inListOrder(gold));
    expect(await pages(org, "label=tier:gold&label=campaign:spring", 2)).toEqual(inListOrder(gold));
    // The time bounds, the times of two of the events: start inclusive, end exclusive.
    const start = labelled[minutes.indexOf(20)]?.scheduledTime ?? "";
    const end = labelled[minutes.indexOf(40)]?.scheduledTime ?? "";
    const inRange = labelled.filter((e) => e.scheduledTime >= start && e.scheduledTime < end);
    expect(inRange).toHaveLength(7);
    const bounds = `scheduledStartDate=${encodeURIComponent(start)}&scheduledEndDate=${encodeURIComponent(end)}`;
    expect(await pages(org, `label=campaign:spring&${bounds}`, 3)).toEqual(inListOrder(inRange));
  });

  it("follows edits: a moved event is listed at its new time, a relabelled one under its new label only", async () => {
    const org = await createTestOrganization(context);
    const [first, second, third] = await batch(org, [
      item(10, { campaign: "spring" }),
      item(20, { campaign: "spring" }),
      item(30, { campaign: "spring" }),
    ]);
    if (!first || !second || !third) throw new Error("the batch created fewer than 3 events");
    const ids = (query: string) => pages(org, query, 2);
    expect(await ids("label=campaign:spring")).toEqual([first.id, second.id, third.id]);

    expect((await edit(org, first.id, { scheduledTime: at(40) })).status).toBe(200);
    expect(await ids("label=campaign:spring")).toEqual([second.id, third.id, first.id]);

    expect((await edit(org, second.id, { labels: { campaign: "autumn" } })).status).toBe(200);
    expect(await ids("label=campaign:spring")).toEqual([third.id, first.id]);
    expect(await ids("label=campaign:autumn")).toEqual([second.id]);

    // An edit that changes neither labels nor time leaves the event where it was.
    expect((await edit(org, third.id, { payload: "other" })).status).toBe(200);
    expect(await ids("label=campaign:spring")).toEqual([third.id, first.id]);

    expect((await edit(org, third.id, { labels: null })).status).toBe(200);
    expect(await ids("label=campaign:spring")).toEqual([first.id]);
    expect(await labelRows(third.id)).toBe(0);
  });

  it("keeps no label rows of deleted events, nor of a deleted organization's", async () => {
    const org = await createTestOrganization(context);
    const [kept, deleted] = await batch(org, [item(10, { a: "1", b: "2" }), item(20, { a: "1" })]);
    if (!kept || !deleted) throw new Error("the batch created fewer than 2 events");
    expect(await labelRows(kept.id)).toBe(2);
    expect(await labelRows(deleted.id)).toBe(1);

    await context.db.$executeRaw`DELETE FROM events WHERE id = ${deleted.id}`;
    expect(await labelRows(deleted.id)).toBe(0);
    expect(await pages(org, "label=a:1", 10)).toEqual([kept.id]);

    await context.db.$executeRaw`DELETE FROM organizations WHERE id = ${org.orgId}`;
    expect(await labelRows(kept.id)).toBe(0);
  });
});
