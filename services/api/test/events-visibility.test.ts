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

// Who sees which event: the key's organization only, and only events inside the search windows.
// "Now" is the injected clock; past deliveries are written straight into the rows.

const NOW = new Date("2030-03-10T12:00:00.000Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const ago = (days: number) => new Date(NOW.getTime() - days * DAY_MS);
const clock = fixedClock(NOW);

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;
let other: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  app = createApp(createTestApiDeps(context, clock).deps);
  [org, other] = await Promise.all([
    createTestOrganization(context, "Mine"),
    createTestOrganization(context, "Theirs"),
  ]);
});
afterAll(() => context.close());

async function createEvent(scheduledTime = new Date(NOW.getTime() + DAY_MS)): Promise<string> {
  const response = await request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send({ payload: "{}", destination: "https://example.com/hook", scheduledTime: scheduledTime.toISOString() });
  expect(response.status).toBe(200);
  return response.body.id;
}

/** An event of `org` that was delivered (or failed) `days` ago, as the worker would have left it. */
async function finishedEvent(status: "Sent" | "Failed To Send" | "Failed To Queue", days: number): Promise<string> {
  const id = await createEvent();
  const at = ago(days);
  const column = status === "Sent" ? "sent_at" : "failed_at";
  await context.db.$executeRawUnsafe(
    `UPDATE events SET status = $1, scheduled_time = $2, ${column} = $2 WHERE id = $3`,
    status,
    at,
    id,
  );
  return id;
}

const get = (id: string, key = org.apiKey) => request(app).get(`/api/events/${id}`).set("x-api-key", key);
const listIds = async (query = "", key = org.apiKey) => {
  const response = await request(app).get(`/api/events?${query}`).set("x-api-key", key);
  expect(response.status).toBe(200);
  return (response.body as { id: string }[]).map((event) => event.id);
};

describe("organization scoping", () => {
  it("answers another organization's event exactly like a missing one", async () => {
    const id = await createEvent();
    expect((await get(id)).status).toBe(200);

    const read = await get(id, other.apiKey);
    expect({ status: read.status, body: read.body }).toEqual({
      status: 404,
      body: { message: "Unable to find event" },
    });
    const edit = await request(app)
      .put(`/api/events/${id}`)
      .set("x-api-key", other.apiKey)
      .send({ status: "Cancelled" });
    expect({ status: edit.status, body: edit.body }).toEqual({
      status: 404,
      body: { message: "Unable to find event" },
    });
    expect(await listIds("", other.apiKey)).not.toContain(id);
    expect(await listIds()).toContain(id);

    // The other organization's attempt changed nothing.
    expect((await get(id)).body.status).toBe("Pending");
  });
});

describe("search windows", () => {
  it("shows an event sent 6 days ago and hides one sent 8 days ago", async () => {
    const recent = await finishedEvent("Sent", 6);
    const old = await finishedEvent("Sent", 8);

    const shown = await get(recent);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ id: recent, status: "Sent", sentAt: ago(6).toISOString() });
    expect(shown.body).not.toHaveProperty("failedAt");
    const hidden = await get(old);
    expect({ status: hidden.status, body: hidden.body }).toEqual({
      status: 404,
      body: { message: "Unable to find event" },
    });

    const listed = await listIds();
    expect(listed).toContain(recent);
    expect(listed).not.toContain(old);
    expect(await listIds(`sentAtStartDate=${ago(7).toISOString()}`)).toEqual([recent]);
  });

  it("applies the same window to failures", async () => {
    const recent = await finishedEvent("Failed To Send", 6);
    const recentUnqueued = await finishedEvent("Failed To Queue", 1);
    const old = await finishedEvent("Failed To Send", 8);
    expect((await get(recent)).body).toMatchObject({ status: "Failed To Send", failedAt: ago(6).toISOString() });
    expect((await get(old)).status).toBe(404);
    expect(await listIds(`failedAtStartDate=${ago(7).toISOString()}`)).toEqual([recent, recentUnqueued]);
    expect(await listIds(`failedAtStartDate=${ago(7).toISOString()}&failedAtEndDate=${ago(1).toISOString()}`)).toEqual([
      recent,
    ]);
  });

  it("hides an event once its delivery leaves the window as time passes", async () => {
    const id = await finishedEvent("Sent", 6);
    expect((await get(id)).status).toBe(200);
    clock.advance(1.5 * DAY_MS);
    try {
      expect((await get(id)).status).toBe(404);
      expect(await listIds()).not.toContain(id);
    } finally {
      clock.set(NOW);
    }
  });

  it("keeps Pending events visible even when overdue, and hides past cancelled ones", async () => {
    const overdue = await createEvent();
    await context.db.$executeRaw`UPDATE events SET scheduled_time = ${ago(3)} WHERE id = ${overdue}`;
    expect((await get(overdue)).status).toBe(200);

    const cancelled = await createEvent();
    await request(app).put(`/api/events/${cancelled}`).set("x-api-key", org.apiKey).send({ status: "Cancelled" });
    expect((await get(cancelled)).body.status).toBe("Cancelled"); // scheduled in the future: still visible
    await context.db.$executeRaw`UPDATE events SET scheduled_time = ${ago(1)} WHERE id = ${cancelled}`;
    expect((await get(cancelled)).status).toBe(404);
  });

  it("answers an edit of an event outside the window with 404, inside it with 400", async () => {
    const old = await finishedEvent("Sent", 8);
    const edit = await request(app).put(`/api/events/${old}`).set("x-api-key", org.apiKey).send({ payload: "x" });
    expect({ status: edit.status, body: edit.body }).toEqual({
      status: 404,
      body: { message: "Unable to find event" },
    });
    const recent = await finishedEvent("Sent", 2);
    const refused = await request(app).put(`/api/events/${recent}`).set("x-api-key", org.apiKey).send({ payload: "x" });
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 400,
      body: { message: "Only Pending events can be updated" },
    });
  });
});

describe("history", () => {
  it("lists the attempts of the last 30 days, oldest first, with what the receiver answered", async () => {
    const id = await finishedEvent("Sent", 1);
    await context.db.$executeRaw`
      INSERT INTO event_attempts (event_id, attempt, at, response_status, response_body, duration_ms, error) VALUES
        (${id}, 3, ${ago(1)}, 200, '{"ok":true}', 41, NULL),
        (${id}, 1, ${ago(31)}, 500, 'oops', 12, 'Destination answered 500'),
        (${id}, 2, ${new Date(ago(1).getTime() - 3_000)}, NULL, NULL, 10000, 'Timed out after 10000 ms')`;
    const response = await get(id);
    expect(response.status).toBe(200);
    expect(response.body.history).toEqual([
      {
        attempt: 2,
        at: new Date(ago(1).getTime() - 3_000).toISOString(),
        responseStatus: null,
        responseBody: null,
        durationMs: 10000,
        error: "Timed out after 10000 ms",
      },
      {
        attempt: 3,
        at: ago(1).toISOString(),
        responseStatus: 200,
        responseBody: '{"ok":true}',
        durationMs: 41,
        error: null,
      },
    ]);
  });
});
