import { type EventQueue, systemClock } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../../../test/support/context.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";
import { createApp } from "../src/app.ts";

// Batches and bulk cancels beside a real worker: a batch whose jobs could not be queued is still
// delivered (the reconciler queues it), and a bulk cancel racing the claims of a burst leaves every
// event delivered or cancelled, never both.

let context: TestContext;
let app: ReturnType<typeof createApp>;
let receiver: Receiver;
let org: TestOrganization;

beforeAll(async () => {
  ({ context, org, receiver } = await createDeliveryContext({ RECONCILE_INTERVAL_MS: "500" }));
  app = createApp(createTestApiDeps(context, systemClock).deps);
});

afterAll(() => context?.close());

const statuses = async (ids: string[]) =>
  new Map(
    (
      await context.db.$queryRaw<{ id: string; status: string }[]>`
        SELECT id, status FROM events WHERE id = ANY(${ids}::text[])`
    ).map((row) => [row.id, row.status]),
  );

describe("a batch and a bulk cancel beside a worker", () => {
  it("delivers a batch whose jobs could not be queued (Redis unreachable at that moment)", async () => {
    const down = () => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
    const failing: EventQueue = { schedule: down, scheduleMany: down, unschedule: down, announceChange: down };
    const withoutQueue = createApp({ ...createTestApiDeps(context, systemClock).deps, eventQueue: failing });
    const scheduledTime = new Date(Date.now() + 1_500).toISOString();
    const response = await request(withoutQueue)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({
        events: Array.from({ length: 5 }, (_, n) => ({ payload: `${n}`, destination: receiver.url, scheduledTime })),
      });
    expect(response.status).toBe(200);
    const ids = (response.body.events as { id: string }[]).map((event) => event.id);
    await expect
      .poll(async () => [...(await statuses(ids)).values()], { timeout: 15_000 })
      .toEqual(["Sent", "Sent", "Sent", "Sent", "Sent"]);
    for (const id of ids) expect(receiver.deliveriesOf(id)).toHaveLength(1);
  });

  it("leaves every event of a burst either delivered or cancelled when a bulk cancel races its claims", async () => {
    const count = 300;
    // Due one after another over 3 s: the worker claims them as they come due, so a cancel sent
    // after the first claim meets claims still being made.
    const start = Date.now() + 2_500;
    const created = await request(app)
      .post("/api/events/batch")
      .set("x-api-key", org.apiKey)
      .send({
        events: Array.from({ length: count }, (_, n) => ({
          payload: `${n}`,
          destination: receiver.url,
          scheduledTime: new Date(start + n * 10).toISOString(),
          labels: { burst: "race" },
        })),
      });
    expect(created.status).toBe(200);
    const ids = (created.body.events as { id: string }[]).map((event) => event.id);
    // The worker's first claims of the burst have begun: the cancel now races the others.
    await expect
      .poll(async () => [...(await statuses(ids)).values()].some((status) => status !== "Pending"), {
        timeout: 10_000,
        interval: 5,
      })
      .toBe(true);
    const cancel = await request(app)
      .post("/api/events/cancel")
      .set("x-api-key", org.apiKey)
      .send({ label: "burst:race" });
    expect(cancel.status).toBe(200);

    // Every event ends Sent or Cancelled.
    await expect
      .poll(
        async () => [...(await statuses(ids)).values()].filter((status) => status !== "Sent" && status !== "Cancelled"),
        { timeout: 20_000 },
      )
      .toEqual([]);
    const final = await statuses(ids);
    const cancelled = ids.filter((id) => final.get(id) === "Cancelled");
    const sent = ids.filter((id) => final.get(id) === "Sent");
    expect(cancel.body).toEqual({ cancelled: cancelled.length });
    expect(cancelled.length + sent.length).toBe(count);
    // The race did happen: some were claimed before the cancel, some cancelled before their claim.
    expect(sent.length).toBeGreaterThan(0);
    expect(cancelled.length).toBeGreaterThan(0);
    for (const id of cancelled) expect(receiver.deliveriesOf(id)).toHaveLength(0);
    for (const id of sent) expect(receiver.deliveriesOf(id).length).toBeGreaterThanOrEqual(1);
  });
});
