import {
  claimEvents,
  eventJobId,
  ONLY_PENDING,
  recordAttempts,
  takeOverEvents,
  updatePendingEvent,
  withdrawWorker,
} from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  announceLiveWorker,
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import { scheduleBurst, scheduleEvent, statusOf } from "../../../test/support/events.ts";
import {
  freePort,
  type ServiceProcess,
  startService,
  waitForService,
  workerProcessEnv,
} from "../../../test/support/processes.ts";
import { sample } from "../../../test/support/prometheus.ts";
import { type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { createWorker } from "../src/worker.ts";

let context: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  // No claim lead: the claim happens at the due instant itself, where the cancels are aimed.
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", CLAIM_LEAD_MS: "0", MAX_EVENTS_PER_MONTH: "100000" });
  receiver = await startTestReceiver(context);
});

afterAll(() => context?.close());

/** A Pending event of a new organization, queued, due in an hour: claimed by hand in a test. */
async function eventDueInAnHour() {
  const org = await createTestOrganization(context);
  return scheduleEvent(context, createTestApiDeps(context).deps.eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: new Date(Date.now() + 3_600_000),
  });
}

/** Cancels the event as the API does; "refused" when it is no longer Pending (claimed or final). */
function cancel(orgId: string, eventId: string): Promise<"cancelled" | "refused"> {
  return updatePendingEvent(context.db, orgId, eventId, { cancel: true }, new Date(), 100000).then(
    () => "cancelled" as const,
    (error: Error) => {
      if (error.message === ONLY_PENDING) return "refused" as const;
      throw error;
    },
  );
}

/**
 * One round of the race: 50 events due 5 ms apart, each cancelled at about its instant (from `aimMs`
 * to `aimMs` + 72 ms after it). Waits until
 * every event is final, then stops the worker, so that nothing it could still send is missed when
 * the deliveries are counted. Returns each event's outcome, checked: a cancel that went through
 * means Cancelled and never delivered; a refused one means Sent, delivered exactly once.
 */
async function cancelRaceRound(aimMs: number): Promise<{ cancelled: number; delivered: number }> {
  const worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
  let stopped = false;
  try {
    const org = await createTestOrganization(context);
    const { eventQueue } = createTestApiDeps(context).deps;
    const due = Date.now() + 1_500;
    const events = await Promise.all(
      Array.from({ length: 50 }, (_, n) =>
        scheduleEvent(context, eventQueue, {
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
              () => cancel(org.orgId, event.id).then(resolve, reject),
              Math.max(0, event.scheduledTime.getTime() - Date.now() + aimMs + (n % 10) * 8),
            );
          }),
      ),
    );
    await expect
      .poll(async () => context.db.event.count({ where: { orgId: org.orgId, status: { in: ["Pending", "Queued"] } } }))
      .toBe(0);
    await worker.stop();
    stopped = true;

    for (const [n, event] of events.entries()) {
      const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
      const deliveries = receiver.deliveriesOf(event.id).length;
      if (cancels[n] === "cancelled") {
        expect([stored.status, deliveries]).toEqual(["Cancelled", 0]);
      } else {
        expect([stored.status, deliveries]).toEqual(["Sent", 1]);
      }
    }
    const cancelled = cancels.filter((c) => c === "cancelled").length;
    return { cancelled, delivered: cancels.length - cancelled };
  } finally {
    if (!stopped) await worker.stop();
  }
}

describe("races", () => {
  it("cancel at the due instant: each event is delivered or cancelled, never both, and both happen", async () => {
    // The cancels are aimed from the instant to 72 ms after it: some land before the claim, some
    // after. Rounds of 50 are repeated (at most 5) until each outcome has been seen at least once,
    // so that the test cannot pass by checking only one side of the race; a round that saw only one
    // outcome moves the next round's aim 30 ms towards the other.
    const total = { cancelled: 0, delivered: 0, rounds: 0 };
    let aimMs = 0;
    while (total.rounds < 5 && (total.cancelled === 0 || total.delivered === 0)) {
      const round = await cancelRaceRound(aimMs);
      total.cancelled += round.cancelled;
      total.delivered += round.delivered;
      total.rounds++;
      if (round.cancelled === 0) aimMs -= 30;
      if (round.delivered === 0) aimMs += 30;
    }
    console.info(
      `cancel race: ${total.cancelled} cancelled, ${total.delivered} delivered in ${total.rounds} round(s) of 50`,
    );
    expect(total.cancelled).toBeGreaterThan(0);
    expect(total.delivered).toBeGreaterThan(0);
  }, 90_000);

  it("a cancel after the delivery is refused, and the event stays Sent, delivered once", async () => {
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    try {
      const org = await createTestOrganization(context);
      const { eventQueue } = createTestApiDeps(context).deps;
      const event = await scheduleEvent(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(Date.now() + 300),
      });
      await expect.poll(() => statusOf(context, event.id)).toBe("Sent");
      expect(await cancel(org.orgId, event.id)).toBe("refused");
      expect(await statusOf(context, event.id)).toBe("Sent");
      expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });

  it("a cancel before the claim wins, and the event is never delivered", async () => {
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    let stopped = false;
    try {
      const org = await createTestOrganization(context);
      const { eventQueue } = createTestApiDeps(context).deps;
      const due = Date.now() + 800;
      const event = await scheduleEvent(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(due),
      });
      // An event due just after it, to the same receiver: once it has been delivered, the
      // cancelled one's time has passed on the same worker.
      const later = await scheduleEvent(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(due + 200),
      });
      expect(Date.now()).toBeLessThan(due);
      expect(await cancel(org.orgId, event.id)).toBe("cancelled");

      await expect.poll(() => statusOf(context, later.id)).toBe("Sent");
      await worker.stop();
      stopped = true;
      expect(await statusOf(context, event.id)).toBe("Cancelled");
      expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
      expect(await context.db.eventAttempt.count({ where: { eventId: event.id } })).toBe(0);
    } finally {
      if (!stopped) await worker.stop();
    }
  });

  it("an attempt of an event another job already ended is not recorded and answers attempt 0, so its job stops", async () => {
    const event = await eventDueInAnHour();
    // Claimed by a job that then lost its lock: two jobs deliver the same Queued event.
    await context.db.event.update({ where: { id: event.id }, data: { status: "Queued" } });
    const attempt = (succeeded: boolean) => ({
      eventId: event.id,
      at: new Date(),
      responseStatus: succeeded ? 200 : 500,
      durationMs: 3,
      error: succeeded ? null : "Receiver answered 500",
      succeeded,
      maxAttempts: 4,
      last: false,
    });
    expect(await recordAttempts(context.db, [attempt(true)])).toEqual([{ attempt: 1, final: "Sent" }]);
    // The other job's failed attempt comes in after the delivery ended: nothing to record, no retry.
    expect(await recordAttempts(context.db, [attempt(false)])).toEqual([{ attempt: 0, final: null }]);
    expect(await context.db.eventAttempt.count({ where: { eventId: event.id } })).toBe(1);
    expect(await statusOf(context, event.id)).toBe("Sent");
  });

  it("a claim records its worker, and of two takeovers of the same claim only one goes through", async () => {
    const event = await eventDueInAnHour();
    const now = new Date();
    const [claimed] = await claimEvents(context.db, [event.id], new Date(Date.now() + 7_200_000), now, "worker-a");
    expect(claimed?.kind).toBe("claimed");
    // A second claim of the same event finds it Queued, with its owner as the claim left it.
    const [again] = await claimEvents(context.db, [event.id], new Date(Date.now() + 7_200_000), new Date(), "worker-b");
    expect(again).toMatchObject({ kind: "resumed", owner: { workerId: "worker-a", since: now } });
    if (again?.kind !== "resumed") throw new Error(`the second claim was ${again?.kind}`);
    const from = again.owner;

    const takeovers = await Promise.all(
      ["worker-b", "worker-c"].map((workerId) =>
        takeOverEvents(context.db, [{ eventId: event.id, from }], workerId, new Date()),
      ),
    );
    expect(takeovers.map((won) => won.has(event.id)).sort()).toEqual([false, true]);
    const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
    expect(stored.status).toBe("Queued");
    expect(["worker-b", "worker-c"]).toContain(stored.claimedBy);
    // The owner read before the takeover is stale now: a third takeover from it changes nothing.
    expect((await takeOverEvents(context.db, [{ eventId: event.id, from }], "worker-d", new Date())).size).toBe(0);
    expect((await context.db.event.findUniqueOrThrow({ where: { id: event.id } })).claimedBy).toBe(stored.claimedBy);
  });

  it("a job of an event that another live worker delivers steps aside, and delivers it once that worker is gone", async () => {
    const org = await createTestOrganization(context);
    const {
      deps: { eventQueue },
      queue,
    } = createTestApiDeps(context);
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(Date.now() + 500),
    });
    // Claimed by another worker, alive, whose lock on the job ran out: the job is back in the queue.
    const owner = "other-live-worker";
    await announceLiveWorker(context, owner);
    await claimEvents(context.db, [event.id], new Date(Date.now() + 60_000), new Date(), owner);
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    const decisions = async (decision: string) => {
      const text = await (await fetch(`http://127.0.0.1:${worker.healthPort}/metrics`)).text();
      return sample(text, "punctual_delivery_owner_decisions_total", { kind: "event", decision });
    };
    try {
      // Taken, found delivered by its live owner, and put back in the queue for later.
      await expect.poll(() => queue.getJobState(eventJobId(event.id)), { timeout: 10_000 }).toBe("delayed");
      expect(await decisions("stepped_aside")).toBeGreaterThanOrEqual(1);
      expect(await decisions("taken_over")).toBe(0);
      expect(receiver.deliveriesOf(event.id)).toHaveLength(0);
      expect(await context.db.event.findUniqueOrThrow({ where: { id: event.id } })).toMatchObject({
        status: "Queued",
        claimedBy: owner,
      });

      // The owner stops (its heartbeat withdrawn) without ending the delivery: the job takes it over.
      await withdrawWorker(context.redis, context.config.QUEUE_PREFIX, owner);
      await expect.poll(() => statusOf(context, event.id), { timeout: 20_000 }).toBe("Sent");
      expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
      const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
      expect(stored.claimedBy).not.toBe(owner);
      expect(stored.claimedBy).toMatch(/^[0-9a-f]{16}$/);
      expect(await decisions("taken_over")).toBe(1);
    } finally {
      await worker.stop();
    }
  }, 40_000);

  it("two worker processes and 500 events due together: every event delivered exactly once", async () => {
    const org = await createTestOrganization(context);
    const ports = [await freePort(), await freePort()];
    const workers: ServiceProcess[] = ports.map((port) =>
      startService("worker", { ...workerProcessEnv(context.config, port), CLAIM_LEAD_MS: "0" }),
    );
    try {
      await Promise.all(workers.map((worker, n) => waitForService(worker, `http://127.0.0.1:${ports[n]}/healthz`)));
      const { eventQueue } = createTestApiDeps(context).deps;
      const due = new Date(Date.now() + 6_000);
      const events = await scheduleBurst(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: due,
        count: 500,
      });
      expect(Date.now()).toBeLessThan(due.getTime());

      // Exactly once is the claim, not how fast: a loaded machine running other files beside it
      // gets the time it needs.
      await expect
        .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), { timeout: 60_000 })
        .toBe(500);
      // Both workers drain and exit before the deliveries are counted: nothing can arrive later.
      expect(await Promise.all(workers.map((worker) => worker.stop()))).toEqual([0, 0]);
      const perEvent = events.map((event) => receiver.deliveriesOf(event.id).length);
      expect(perEvent.filter((count) => count !== 1)).toEqual([]);
      expect(await context.db.eventAttempt.count({ where: { event: { orgId: org.orgId } } })).toBe(500);
    } finally {
      // Already stopped when the test got that far; otherwise stopped here.
      await Promise.all(workers.map((worker) => worker.stop()));
    }
  }, 120_000);
});
