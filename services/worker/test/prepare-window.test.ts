import type { Express } from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { preparedJobs } from "../../../test/support/prometheus.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";
import { createApp } from "../../api/src/app.ts";
import type { DeliveryWorker } from "../src/worker.ts";

// Prepare early, claim late (contract §6): a worker holds an event's job from PREPARE_AHEAD_MS
// before its time while the event stays Pending; edits and cancels made through the API in that
// window always win, and only what the claim (CLAIM_LEAD_MS before the time) returns is sent.

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;
let app: Express;

beforeAll(async () => {
  ({ context, org, receiver, worker } = await createDeliveryContext({
    PREPARE_AHEAD_MS: "30000",
    CLAIM_LEAD_MS: "1000",
  }));
  app = createApp(createTestApiDeps(context).deps);
});

afterAll(() => context?.close());

/** The worker's `punctual_prepared_jobs` gauge. */
const heldJobs = () => preparedJobs(worker.healthPort);

async function prepared(scheduledTime: Date, payload = "before") {
  const { eventQueue } = createTestApiDeps(context).deps;
  const event = await scheduleEvent(context, eventQueue, {
    orgId: org.orgId,
    destination: `${receiver.url}?case=${Math.random()}`,
    scheduledTime,
    payload,
  });
  // Handed to the worker at once (due within PREPARE_AHEAD_MS), and still Pending.
  const job = await createTestApiDeps(context).queue.getJob(`event-${event.id}`);
  await expect.poll(() => job?.getState()).toBe("active");
  expect(await statusOf(context, event.id)).toBe("Pending");
  return event;
}

const edit = (eventId: string, body: Record<string, unknown>) =>
  request(app).put(`/api/events/${eventId}`).set("x-api-key", org.apiKey).send(body);

describe("an event prepared ahead of its time", () => {
  it("is never delivered when cancelled in the prepare window, and its job is let go at once", async () => {
    const event = await prepared(new Date(Date.now() + 8_000));
    const before = await heldJobs();
    const cancelled = await edit(event.id, { status: "Cancelled" });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("Cancelled");
    // The worker heard of the change and read the event again: the prepared copy is gone long
    // before the event's time.
    await expect.poll(heldJobs, { timeout: 3_000 }).toBe(before - 1);
    expect(Date.now()).toBeLessThan(event.scheduledTime.getTime());
    const job = await createTestApiDeps(context).queue.getJob(`event-${event.id}`);
    expect(await job?.getState()).toBe("completed");
    expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
    expect(await statusOf(context, event.id)).toBe("Cancelled");
  });

  it("is delivered once, with the new payload, at the new earlier time after an edit in the window", async () => {
    const event = await prepared(new Date(Date.now() + 20_000));
    const newTime = new Date(Date.now() + 3_000);
    const edited = await edit(event.id, { payload: "after", scheduledTime: newTime.toISOString() });
    expect(edited.status).toBe(200);

    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const deliveries = receiver.deliveriesOf(event.id);
    expect(deliveries).toHaveLength(1);
    expect(JSON.parse(deliveries[0]?.rawBody ?? "{}")).toEqual({
      payload: "after",
      scheduledTime: newTime.toISOString(),
    });
    // At the new time, not the old one: never early, and not held back to the prepared time.
    const arrived = deliveries[0]?.at ?? 0;
    expect(arrived).toBeGreaterThanOrEqual(newTime.getTime());
    expect(arrived - newTime.getTime()).toBeLessThan(1_000);
  });

  it("sends what the claim returns: a payload changed behind the worker's back in the window", async () => {
    const scheduledTime = new Date(Date.now() + 3_000);
    const event = await prepared(scheduledTime);
    // Written straight to Postgres, no announcement: only the claim can see it.
    await context.db.event.update({ where: { id: event.id }, data: { payload: "changed unannounced" } });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const deliveries = receiver.deliveriesOf(event.id);
    expect(deliveries).toHaveLength(1);
    expect(JSON.parse(deliveries[0]?.rawBody ?? "{}").payload).toBe("changed unannounced");
  });

  it("loses the claim to a cancel it was not told about: never delivered", async () => {
    const scheduledTime = new Date(Date.now() + 3_000);
    const event = await prepared(scheduledTime);
    // A cancel committed without an announcement (as if the message were lost): the prepared copy
    // still goes for its claim, which finds the event Cancelled.
    await context.db.event.update({ where: { id: event.id }, data: { status: "Cancelled" } });
    const job = await createTestApiDeps(context).queue.getJob(`event-${event.id}`);
    await expect.poll(() => job?.getState(), { timeout: 10_000 }).toBe("completed");
    expect(Date.now()).toBeGreaterThanOrEqual(scheduledTime.getTime() - context.config.CLAIM_LEAD_MS);
    await new Promise((resolve) => setTimeout(resolve, scheduledTime.getTime() + 300 - Date.now()));
    expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
    expect(await statusOf(context, event.id)).toBe("Cancelled");
  });

  it("goes back to the queue when moved out of the window, and is delivered at its new time", async () => {
    const event = await prepared(new Date(Date.now() + 10_000));
    // Beyond the window (30 s) and its slack: the worker releases the job to Redis.
    const newTime = new Date(Date.now() + 45_000);
    expect((await edit(event.id, { scheduledTime: newTime.toISOString() })).status).toBe(200);
    const job = await createTestApiDeps(context).queue.getJob(`event-${event.id}`);
    await expect.poll(() => job?.getState(), { timeout: 5_000 }).toBe("delayed");
    // Due back PREPARE_AHEAD_MS before its new time.
    const delayed = await createTestApiDeps(context).queue.getJob(`event-${event.id}`);
    const dueBack = (delayed?.timestamp ?? 0) + (delayed?.delay ?? 0);
    expect(Math.abs(dueBack - (newTime.getTime() - context.config.PREPARE_AHEAD_MS))).toBeLessThan(1_000);
    expect(await statusOf(context, event.id)).toBe("Pending");
    expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
  });
});
