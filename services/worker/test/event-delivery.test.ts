import { init, webhookHandler } from "@jiter/node";
import { updatePendingEvent } from "@punctual/core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, type TestContext, type TestOrganization } from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";
import type { DeliveryWorker } from "../src/worker.ts";

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;
const verifiedByJiter: { payload: unknown; scheduledTime: Date }[] = [];
let failNext = 0;

beforeAll(async () => {
  ({ context, org, receiver, worker } = await createDeliveryContext(
    { RETRY_DELAYS_MS: "300,300,300" },
    {
      // The SDK's own middleware verifies the signature and answers 200, or 401 when it is wrong.
      mount: (app) =>
        app.post(
          "/hook",
          (_req, res, next) => {
            if (failNext > 0) {
              failNext--;
              res.status(503).json({ busy: true });
              return;
            }
            next();
          },
          webhookHandler(async ({ payload, scheduledTime }) => {
            verifiedByJiter.push({ payload, scheduledTime });
          }),
        ),
    },
  ));
  init({ apiKey: org.apiKey, signingSecret: org.signingSecret, baseUrl: "http://127.0.0.1:1/api" });
});

afterAll(() => context?.close());

describe("event delivery", () => {
  it("delivers a due event once, signed, exactly at its time", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const scheduledTime = new Date(Date.now() + 1_500);
    const payload = JSON.stringify({ order: 42, note: '€ "quoted"' });
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime,
      payload,
    });

    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const [delivery, ...more] = receiver.deliveriesOf(event.id);
    expect(more).toHaveLength(0);
    expect(delivery).toBeDefined();
    if (!delivery) return;

    // Never early, and on time.
    expect(delivery.at).toBeGreaterThanOrEqual(scheduledTime.getTime());
    expect(delivery.at - scheduledTime.getTime()).toBeLessThan(1_000);

    // The body, byte for byte, and both signatures.
    expect(delivery.rawBody).toBe(JSON.stringify({ payload, scheduledTime: scheduledTime.toISOString() }));
    expect(delivery.headers["content-type"]).toBe("application/json");
    expect(delivery.headers["user-agent"]).toMatch(/^Punctual\//);
    expect(verifiedByJiter).toContainEqual({ payload, scheduledTime });
    const verified = new Webhook(org.signingSecret).verify(delivery.rawBody, {
      "webhook-id": String(delivery.headers["webhook-id"]),
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": String(delivery.headers["webhook-signature"]),
    });
    expect(verified).toEqual({ payload, scheduledTime: scheduledTime.toISOString() });

    const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id }, include: { attempts: true } });
    expect(stored.sentAt).toBeInstanceOf(Date);
    expect(stored.failedAt).toBeNull();
    expect(stored.attempts).toEqual([
      expect.objectContaining({ attempt: 1, responseStatus: 200, error: null, durationMs: expect.any(Number) }),
    ]);
  });

  it("retries a failing receiver and ends Sent when it recovers, one history row per attempt", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    failNext = 2;
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(Date.now() + 200),
    });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const attempts = await context.db.eventAttempt.findMany({
      where: { eventId: event.id },
      orderBy: { attempt: "asc" },
    });
    expect(attempts.map((attempt) => [attempt.attempt, attempt.responseStatus, attempt.error])).toEqual([
      [1, 503, "Receiver answered 503"],
      [2, 503, "Receiver answered 503"],
      [3, 200, null],
    ]);
    // What the receiver said is kept with each attempt (the SDK's handler answers "OK").
    expect(attempts.map((attempt) => attempt.responseBody)).toEqual(['{"busy":true}', '{"busy":true}', "OK"]);
    // webhook-id is stable across the retries of one delivery.
    expect(receiver.deliveriesOf(event.id)).toHaveLength(3);
  });

  it("follows an event moved later: its old job re-waits for the new time", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const first = new Date(Date.now() + 1_200);
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: first,
    });
    // Moved in Postgres only: the queued job still fires at the first time.
    const moved = new Date(first.getTime() + 2_000);
    await updatePendingEvent(context.db, org.orgId, event.id, { scheduledTime: moved }, new Date(), 1000);

    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const [delivery] = receiver.deliveriesOf(event.id);
    expect(delivery?.at).toBeGreaterThanOrEqual(moved.getTime());
    expect(JSON.parse(delivery?.rawBody ?? "{}").scheduledTime).toBe(moved.toISOString());
  });

  it("never delivers a cancelled event", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(Date.now() + 1_500),
    });
    // Cancelled in Postgres while its job stays queued: the claim finds it final and stops.
    await updatePendingEvent(context.db, org.orgId, event.id, { cancel: true }, new Date(), 1000);
    const queue = createTestApiDeps(context).queue;
    await expect
      .poll(async () => (await queue.getJob(`event-${event.id}`))?.finishedOn, { timeout: 10_000 })
      .toBeDefined();
    expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
    expect(await statusOf(context, event.id)).toBe("Cancelled");
  });

  it("serves /healthz while running", async () => {
    const response = await fetch(`http://127.0.0.1:${worker.healthPort}/healthz`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ok" });
  });
});
