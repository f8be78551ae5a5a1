import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorker, type DeliveryWorker } from "../../services/worker/src/worker.ts";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { scheduleEvent, statusOf } from "../support/events.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

// Chaos 5: receivers that hang past the timeout, reset connections, redirect, refuse or fail:
// the right retries and final statuses.

let context: TestContext;
let worker: DeliveryWorker;
const receivers: Receiver[] = [];

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    DELIVERY_TIMEOUT_MS: "500",
    RETRY_DELAYS_MS: "100,100,100",
  });
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await context.close();
});

async function deliverTo(behaviour: Parameters<typeof startReceiver>[0]) {
  const receiver = await startReceiver(behaviour);
  receivers.push(receiver);
  const org = await createTestOrganization(context);
  const event = await scheduleEvent(context, createTestApiDeps(context).deps.eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: new Date(Date.now() + 100),
  });
  await expect.poll(() => statusOf(context, event.id), { timeout: 15_000 }).toMatch(/^(Sent|Failed To Send)$/);
  const attempts = await context.db.eventAttempt.findMany({
    where: { eventId: event.id },
    orderBy: { attempt: "asc" },
  });
  return { receiver, event, status: await statusOf(context, event.id), attempts };
}

describe("receiver failures", () => {
  it("a receiver that hangs past the timeout: 4 timed-out attempts, then Failed To Send", async () => {
    const { status, attempts } = await deliverTo({
      mount: (app) => app.use(() => {}),
    });
    expect(status).toBe("Failed To Send");
    expect(attempts.map((a) => [a.responseStatus, a.error])).toEqual(
      Array.from({ length: 4 }, () => [null, "Timed out after 500 ms"]),
    );
    for (const attempt of attempts) expect(attempt.durationMs).toBeGreaterThanOrEqual(490);
  });

  it("a receiver that resets the connection: network errors, retried, then Failed To Send", async () => {
    const { status, attempts } = await deliverTo({
      mount: (app) => app.use((req) => (req.socket as Socket).destroy()),
    });
    expect(status).toBe("Failed To Send");
    expect(attempts).toHaveLength(4);
    for (const attempt of attempts) {
      expect(attempt.responseStatus).toBeNull();
      expect(attempt.error).toMatch(/ECONNRESET|socket hang up/);
    }
  });

  it("a redirect is a failure and is not followed", async () => {
    const target = await startReceiver();
    receivers.push(target);
    const { status, attempts } = await deliverTo({
      mount: (app) => app.use((_req, res) => res.redirect(302, target.url)),
    });
    expect(status).toBe("Failed To Send");
    expect(attempts.map((a) => [a.responseStatus, a.error])).toEqual(
      Array.from({ length: 4 }, () => [302, "Redirects are not followed (302)"]),
    );
    expect(target.deliveries).toHaveLength(0);
  });

  it("a 4xx is a failure like any non-2xx, retried on the same schedule", async () => {
    const { status, attempts } = await deliverTo({ status: () => 404 });
    expect(status).toBe("Failed To Send");
    expect(attempts.map((a) => [a.responseStatus, a.error])).toEqual(
      Array.from({ length: 4 }, () => [404, "Receiver answered 404"]),
    );
  });

  it("a receiver that fails three times then answers 2xx: Sent at the fourth attempt", async () => {
    const { status, attempts, receiver, event } = await deliverTo({ status: (n) => (n < 3 ? 503 : 204) });
    expect(status).toBe("Sent");
    expect(attempts.map((a) => a.responseStatus)).toEqual([503, 503, 503, 204]);
    expect(attempts.at(-1)?.error).toBeNull();
    expect(receiver.deliveriesOf(event.id)).toHaveLength(4);
  });
});
