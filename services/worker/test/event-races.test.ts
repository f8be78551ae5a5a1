import { ONLY_PENDING, updatePendingEvent } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import { scheduleBurst, scheduleEvent } from "../../../test/support/events.ts";
import { freePort, type ServiceProcess, startService, waitForHttp } from "../../../test/support/processes.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createWorker } from "../src/worker.ts";

let context: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  // No claim lead: the claim happens at the due instant itself, where the cancels are aimed.
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", CLAIM_LEAD_MS: "0", MAX_EVENTS_PER_MONTH: "100000" });
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver.close();
  await context.close();
});

describe("races", () => {
  it("cancel at the due instant, 50 times: each event is delivered or cancelled, never both", async () => {
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    try {
      const org = await createTestOrganization(context);
      const { scheduler } = createTestApiDeps(context).deps;
      const due = Date.now() + 1_500;
      const events = await Promise.all(
        Array.from({ length: 50 }, (_, n) =>
          scheduleEvent(context, scheduler, {
            orgId: org.orgId,
            destination: receiver.url,
            // Spread over 250 ms so the cancels meet the claims at different moments.
            scheduledTime: new Date(due + n * 5),
          }),
        ),
      );
      const cancels = await Promise.all(
        events.map(
          (event, n) =>
            new Promise<"cancelled" | "refused">((resolve, reject) => {
              // Aim at the instant itself, give or take the queue's own lateness.
              setTimeout(
                () =>
                  updatePendingEvent(context.db, org.orgId, event.id, { cancel: true }, new Date(), 100000).then(
                    () => resolve("cancelled"),
                    (error: Error) => (error.message === ONLY_PENDING ? resolve("refused") : reject(error)),
                  ),
                Math.max(0, event.scheduledTime.getTime() - Date.now() + (n % 10) * 8),
              );
            }),
        ),
      );
      await expect
        .poll(async () =>
          context.db.event.count({ where: { orgId: org.orgId, status: { in: ["Pending", "Queued"] } } }),
        )
        .toBe(0);
      // Give a wrongly delivered cancelled event time to arrive before counting.
      await new Promise((resolve) => setTimeout(resolve, 500));

      for (const [n, event] of events.entries()) {
        const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
        const deliveries = receiver.deliveriesOf(event.id).length;
        if (cancels[n] === "cancelled") {
          expect([stored.status, deliveries]).toEqual(["Cancelled", 0]);
        } else {
          expect([stored.status, deliveries]).toEqual(["Sent", 1]);
        }
      }
      console.info(
        `cancel race: ${cancels.filter((c) => c === "cancelled").length} cancelled, ${cancels.filter((c) => c === "refused").length} delivered`,
      );
    } finally {
      await worker.stop();
    }
  }, 30_000);

  it("two worker processes and 500 events due together: every event delivered exactly once", async () => {
    const org = await createTestOrganization(context);
    const ports = [await freePort(), await freePort()];
    const workers: ServiceProcess[] = ports.map((port) =>
      startService("worker", {
        DATABASE_URL: context.config.DATABASE_URL,
        REDIS_URL: context.config.REDIS_URL,
        QUEUE_PREFIX: context.config.QUEUE_PREFIX,
        WORKER_HEALTH_PORT: String(port),
        ALLOW_PRIVATE_DESTINATIONS: "true",
        CLAIM_LEAD_MS: "0",
        LOG_LEVEL: "warn",
      }),
    );
    try {
      await Promise.all(ports.map((port) => waitForHttp(`http://127.0.0.1:${port}/healthz`)));
      const { scheduler } = createTestApiDeps(context).deps;
      const due = new Date(Date.now() + 6_000);
      const events = await scheduleBurst(context, scheduler, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: due,
        count: 500,
      });
      expect(Date.now()).toBeLessThan(due.getTime());

      await expect
        .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), { timeout: 30_000 })
        .toBe(500);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const perEvent = events.map((event) => receiver.deliveriesOf(event.id).length);
      expect(perEvent.filter((count) => count !== 1)).toEqual([]);
      expect(await context.db.eventAttempt.count({ where: { event: { orgId: org.orgId } } })).toBe(500);
    } finally {
      const codes = await Promise.all(workers.map((worker) => worker.stop()));
      expect(codes).toEqual([0, 0]);
    }
  }, 60_000);
});
