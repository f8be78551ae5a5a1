import { systemClock } from "@punctual/core";
import { Webhook } from "standardwebhooks";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../../../test/support/context.ts";
import { statusOf } from "../../../test/support/events.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";
import { createApp } from "../src/app.ts";

// Replays reach their receiver: the API creates them, a real worker delivers them, signed like any
// event, under their own id. The originals failed (written straight into their rows).

let context: TestContext;
let app: ReturnType<typeof createApp>;
let receiver: Receiver;
let org: TestOrganization;

beforeAll(async () => {
  ({ context, org, receiver } = await createDeliveryContext());
  app = createApp(createTestApiDeps(context, systemClock).deps);
});

afterAll(() => context?.close());

/** A Failed To Send event of `org` to the receiver, with its one failed attempt, as a worker leaves it. */
async function failedEvent(payload: string, secondsAgo = 60): Promise<string> {
  const created = await request(app)
    .post("/api/events")
    .set("x-api-key", org.apiKey)
    .send({ payload, destination: receiver.url, scheduledTime: new Date(Date.now() + 3_600_000).toISOString() });
  expect(created.status).toBe(200);
  const at = new Date(Date.now() - secondsAgo * 1000);
  await context.db.$executeRaw`
    UPDATE events SET status = 'Failed To Send', scheduled_time = ${at}, failed_at = ${at} WHERE id = ${created.body.id}`;
  await context.db.eventAttempt.create({
    data: {
      eventId: created.body.id,
      attempt: 1,
      at,
      responseStatus: 503,
      durationMs: 5,
      error: "Receiver answered 503",
    },
  });
  return created.body.id;
}

describe("replays delivered by a worker", () => {
  it("delivers a replay once, signed, with the original's payload, under its own id; the original stays failed", async () => {
    const payload = JSON.stringify({ invoice: 7 });
    const original = await failedEvent(payload);

    const response = await request(app).post(`/api/events/${original}/replay`).set("x-api-key", org.apiKey);
    expect(response.status).toBe(200);
    const replayId: string = response.body.id;

    await expect.poll(() => statusOf(context, replayId), { timeout: 10_000 }).toBe("Sent");
    const [delivery, ...more] = receiver.deliveriesOf(replayId);
    expect(more).toHaveLength(0);
    expect(delivery).toBeDefined();
    if (!delivery) return;
    expect(delivery.rawBody).toBe(JSON.stringify({ payload, scheduledTime: response.body.scheduledTime }));
    const verified = new Webhook(org.signingSecret).verify(delivery.rawBody, {
      "webhook-id": String(delivery.headers["webhook-id"]),
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": String(delivery.headers["webhook-signature"]),
    });
    expect(verified).toEqual({ payload, scheduledTime: response.body.scheduledTime });

    expect(receiver.deliveriesOf(original)).toHaveLength(0);
    expect(await statusOf(context, original)).toBe("Failed To Send");
    expect(await context.db.eventAttempt.count({ where: { eventId: original } })).toBe(1);
    const got = await request(app).get(`/api/events/${replayId}`).set("x-api-key", org.apiKey);
    expect(got.body).toMatchObject({
      status: "Sent",
      replayOf: original,
      history: [{ attempt: 1, responseStatus: 200 }],
    });
  });

  it("delivers every event of a bulk replay", async () => {
    // Oldest first: n:1 is replayed first.
    const originals = [await failedEvent('{"n":1}', 120), await failedEvent('{"n":2}', 90)];

    const response = await request(app)
      .post("/api/events/replay")
      .set("x-api-key", org.apiKey)
      .send({ status: "Failed To Send" });
    expect(response.status).toBe(200);
    const replays = response.body.events as string[];
    expect(replays).toHaveLength(2);

    for (const id of replays) await expect.poll(() => statusOf(context, id), { timeout: 10_000 }).toBe("Sent");
    const bodies = replays.map((id) => JSON.parse(receiver.deliveriesOf(id)[0]?.rawBody ?? "{}").payload);
    expect(bodies).toEqual(['{"n":1}', '{"n":2}']);
    for (const id of originals) expect(await statusOf(context, id)).toBe("Failed To Send");
  });
});
