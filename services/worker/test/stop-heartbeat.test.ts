import { workerHeartbeatsLeft } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { startReceiver } from "../../../test/support/receiver.ts";
import { createWorker } from "../src/worker.ts";

// A stopping worker keeps its heartbeat while it finishes the deliveries it claimed: another
// worker finding one of them Queued in that time steps aside instead of sending it again
// (delivery/owners.ts). Withdrawn at the start of the stop, it let a rolling replacement send
// dozens of events twice.
let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext({ WORKER_HEALTH_PORT: "0" });
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

describe("a stopping worker's heartbeat", () => {
  it("stays while a claimed delivery is in flight and goes once it is recorded", async () => {
    let answered = false;
    const receiver = await startReceiver({
      // Answers 2 s after the request arrives: the stop begins while the delivery is on the wire.
      mount: (app) =>
        app.use((_req, _res, next) =>
          setTimeout(() => {
            answered = true;
            next();
          }, 2_000),
        ),
    });
    const { deps } = createTestApiDeps(context);
    const worker = createWorker({ ...deps, clock: { now: () => new Date() } });
    await worker.start();
    const heartbeatLeft = async (id: string) =>
      (await workerHeartbeatsLeft(context.redis, context.config.QUEUE_PREFIX, [id])).has(id);
    try {
      const event = await scheduleEvent(context, deps.eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(Date.now() + 500),
      });
      await expect.poll(() => receiver.deliveriesOf(event.id).length).toBe(1);
      const owner = (await context.db.event.findUnique({ where: { id: event.id } }))?.claimedBy;
      expect(owner).toBeTruthy();

      const stopped = worker.stop();
      // The stop has begun and the answer has not come: the owner is still live.
      expect(answered).toBe(false);
      expect(await heartbeatLeft(owner as string)).toBe(true);
      await stopped;
      expect(await statusOf(context, event.id)).toBe("Sent");
      expect(await heartbeatLeft(owner as string)).toBe(false);
    } finally {
      await receiver.close();
    }
  }, 60_000);
});
