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

// GET /api/events: order, filters and keyset pagination.

const NOW = new Date("2030-05-01T00:00:00.000Z");
const HOUR_MS = 60 * 60 * 1000;
const at = (hours: number) => new Date(NOW.getTime() + hours * HOUR_MS).toISOString();
const clock = fixedClock(NOW);

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;
/** Every event of the organization, in the order the API must return them. */
let expected: { id: string; scheduledTime: string }[];

beforeAll(async () => {
  context = await createTestContext();
  app = createApp(createTestApiDeps(context, clock).deps);
  org = await createTestOrganization(context);
  // Created out of order, several at the same instant: ties are broken by id.
  const times = [5, 1, 3, 1, 2, 5, 1, 4, 3, 2, 6];
  const created = await Promise.all(
    times.map(async (hours) => {
      const response = await request(app)
        .post("/api/events")
        .set("x-api-key", org.apiKey)
        .send({ payload: String(hours), destination: "https://example.com/hook", scheduledTime: at(hours) });
      expect(response.status).toBe(200);
      return { id: response.body.id as string, scheduledTime: response.body.scheduledTime as string };
    }),
  );
  expected = created.sort((a, b) =>
    a.scheduledTime === b.scheduledTime ? (a.id < b.id ? -1 : 1) : a.scheduledTime < b.scheduledTime ? -1 : 1,
  );
});
afterAll(() => context.close());

const list = (query = "", target = app) => request(target).get(`/api/events?${query}`).set("x-api-key", org.apiKey);
const ids = (response: request.Response) => (response.body as { id: string }[]).map((event) => event.id);

describe("GET /api/events", () => {
  it("orders by scheduledTime, then id, and answers a plain array", async () => {
    const response = await list();
    expect(response.status).toBe(200);
    expect(Array.isArray(response.body)).toBe(true);
    expect(ids(response)).toEqual(expected.map((event) => event.id));
    expect(response.headers["x-next-cursor"]).toBeUndefined();
  });

  it("pages with limit and X-Next-Cursor, covering every event exactly once", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const response = await list(`limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(response.status).toBe(200);
      expect(response.body.length).toBeLessThanOrEqual(3);
      seen.push(...ids(response));
      cursor = response.headers["x-next-cursor"];
      pages += 1;
    } while (cursor && pages < 10);
    expect(pages).toBe(4); // 3 + 3 + 3 + 2
    expect(seen).toEqual(expected.map((event) => event.id));
  });

  it("lists newest first with order=desc, paging backwards with the same cursor", async () => {
    const newestFirst = expected.map((event) => event.id).reverse();
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const response = await list(`order=desc&limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(response.status).toBe(200);
      seen.push(...ids(response));
      cursor = response.headers["x-next-cursor"];
    } while (cursor);
    expect(seen).toEqual(newestFirst);
    expect(ids(await list("order=asc"))).toEqual(expected.map((event) => event.id));
    const wrong = await list("order=newest");
    expect(wrong.status).toBe(400);
    expect(wrong.body).toEqual({ message: "order must be 'asc' or 'desc'" });
  });

  it("caps a page at MAX_LIST_RESULTS", async () => {
    const { deps } = createTestApiDeps(context, clock);
    const capped = createApp({ ...deps, config: { ...deps.config, MAX_LIST_RESULTS: 4 } });
    const first = await list("", capped);
    expect(ids(first)).toEqual(expected.slice(0, 4).map((event) => event.id));
    expect(first.headers["x-next-cursor"]).toEqual(expect.any(String));
    const asked = await list("limit=1000", capped);
    expect(asked.body).toHaveLength(4);
  });

  it("treats scheduled start bounds as inclusive and end bounds as exclusive", async () => {
    const response = await list(`scheduledStartDate=${at(2)}&scheduledEndDate=${at(4)}`);
    const inRange = expected.filter((event) => event.scheduledTime >= at(2) && event.scheduledTime < at(4));
    expect(inRange).toHaveLength(4);
    expect(ids(response)).toEqual(inRange.map((event) => event.id));
  });

  it("filters by one status or by a comma-separated list", async () => {
    const [first, second] = expected;
    await request(app).put(`/api/events/${first?.id}`).set("x-api-key", org.apiKey).send({ status: "Cancelled" });
    await context.db.$executeRaw`UPDATE events SET status = 'Queued' WHERE id = ${second?.id}`;
    try {
      expect(ids(await list("status=Cancelled"))).toEqual([first?.id]);
      expect(ids(await list("status=Queued,Cancelled"))).toEqual([first?.id, second?.id]);
      expect(ids(await list("status=Failed+To+Send,Queued"))).toEqual([second?.id]);
      expect(ids(await list("status=Pending"))).toEqual(expected.slice(2).map((event) => event.id));
    } finally {
      await context.db.$executeRaw`UPDATE events SET status = 'Pending' WHERE id IN (${first?.id}, ${second?.id})`;
    }
  });
});
