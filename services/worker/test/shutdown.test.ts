import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleBurst, scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { exitOf, type ServiceProcess, signalService, startWorkerProcess } from "../../../test/support/processes.ts";
import { sample } from "../../../test/support/prometheus.ts";
import { startReceiver } from "../../../test/support/receiver.ts";

// Contract §8: on SIGTERM a worker stops taking jobs, finishes the deliveries in flight and exits 0;
// nothing is lost or delivered twice because of a restart. Real worker processes.
//
// The services run as `node --import tsx` (test/support/processes.ts), so a signal reaches them
// directly (the tsx launcher would SIGKILL a busy child 30 ms after relaying one: see the README).
let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: "100000" });
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

function startWorker(overrides: Record<string, string> = {}): Promise<{ worker: ServiceProcess; port: number }> {
  // Fewer jobs held than the burst, so a restart really falls in the middle of it.
  return startWorkerProcess(context.config, { LOG_LEVEL: "info", WORKER_PREPARED_JOBS: "50", ...overrides });
}

describe("SIGTERM", () => {
  it("finishes the delivery in flight to a slow receiver, takes nothing new, and exits 0", async () => {
    let signalled = 0;
    const receiver = await startReceiver({
      // Answers 1.5 s after the request arrives.
      mount: (app) => app.use((_req, _res, next) => setTimeout(next, 1_500)),
    });
    const { worker } = await startWorker();
    let second: ServiceProcess | undefined;
    try {
      const { eventQueue } = createTestApiDeps(context).deps;
      const event = await scheduleEvent(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(Date.now() + 500),
      });
      await expect.poll(() => receiver.deliveriesOf(event.id).length).toBe(1);

      const exited = exitOf(worker);
      signalService(worker, "SIGTERM");
      signalled = Date.now();
      // Once the worker has logged the signal it has stopped fetching: a job due now stays put.
      await expect.poll(() => worker.output().includes('"msg":"shutting down"')).toBe(true);
      const later = await scheduleEvent(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(Date.now() + 100),
      });

      expect(await exited, worker.output()).toBe(0);
      const exitedAt = Date.now();
      const [delivery] = receiver.deliveriesOf(event.id);
      // It waited for the receiver's answer (1.5 s after arrival), then recorded it.
      expect(exitedAt).toBeGreaterThanOrEqual((delivery?.at ?? 0) + 1_500);
      const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id }, include: { attempts: true } });
      expect(stored.status).toBe("Sent");
      expect(stored.attempts.map((attempt) => [attempt.attempt, attempt.responseStatus])).toEqual([[1, 200]]);
      // The event due during the shutdown was neither claimed nor sent by the stopping worker.
      expect(await statusOf(context, later.id)).toBe("Pending");
      expect(receiver.deliveriesOf(later.id)).toHaveLength(0);

      // The next worker delivers it, once.
      ({ worker: second } = await startWorker());
      await expect.poll(() => statusOf(context, later.id)).toBe("Sent");
      expect(receiver.deliveriesOf(later.id)).toHaveLength(1);
      expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
      console.info(
        `worker shutdown: in-flight delivery recorded Sent, exited 0 ${exitedAt - signalled} ms after SIGTERM`,
      );
    } finally {
      if (second) {
        const code = exitOf(second);
        signalService(second, "SIGTERM");
        expect(await code).toBe(0);
      }
      await worker.stop("SIGKILL");
      await receiver.close();
    }
  }, 60_000);

  /**
   * Schedules 300 events due together on a receiver answering after 50 ms, SIGTERMs the first worker
   * at `signal` ("at-delivery": when the 100th delivery arrives; "before-due": 300 ms before the due
   * time, while the worker holds events claimed ahead and waiting for their instant), starts a second
   * worker, and counts deliveries by webhook-id.
   */
  async function burstRestart(signal: "at-delivery" | "before-due") {
    const total = 300;
    const signalAt = 100;
    let first: ServiceProcess | undefined;
    const receiver = await startReceiver({
      mount: (app) =>
        app.use((_req, _res, next) => {
          if (signal === "at-delivery" && receiver.deliveries.length === signalAt && first) {
            signalService(first, "SIGTERM");
          }
          setTimeout(next, 50);
        }),
    });
    ({ worker: first } = await startWorker());
    let second: { worker: ServiceProcess; port: number } | undefined;
    try {
      const firstExited = exitOf(first);
      const { eventQueue } = createTestApiDeps(context).deps;
      const due = new Date(Date.now() + 4_000);
      const events = await scheduleBurst(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: due,
        count: total,
      });
      expect(Date.now()).toBeLessThan(due.getTime() - 300);
      if (signal === "before-due") {
        const worker = first;
        setTimeout(() => signalService(worker, "SIGTERM"), due.getTime() - 300 - Date.now());
      }

      expect(await firstExited, first.output()).toBe(0);
      const byFirst = receiver.deliveries.length;
      expect(byFirst).toBeGreaterThan(0);
      expect(byFirst).toBeLessThan(total);

      second = await startWorker();
      const ids = [...new Set(events.map((event) => event.id))];
      await expect
        .poll(() => context.db.event.count({ where: { id: { in: ids }, status: "Sent" } }), { timeout: 30_000 })
        .toBe(total);

      const perEvent = events.map((event) => receiver.deliveriesOf(event.id).length);
      const missing = perEvent.filter((count) => count === 0).length;
      const doubled = perEvent.filter((count) => count > 1).length;
      const early = receiver.deliveries.filter((delivery) => delivery.at < due.getTime()).length;
      const attempts = await context.db.eventAttempt.count({ where: { eventId: { in: ids } } });
      const metrics = await (await fetch(`http://127.0.0.1:${second.port}/metrics`)).text();
      const bySecond = sample(metrics, "punctual_deliveries_total", { kind: "event", outcome: "sent" });
      console.info(
        `burst restart (${signal}): ${total} events; first worker delivered ${byFirst} and exited 0; ` +
          `second delivered ${bySecond} (its metrics); ${total - missing - doubled} exactly once, ` +
          `${missing} missing, ${doubled} doubled, ${early} early; ${attempts} attempts recorded`,
      );
      expect({ missing, doubled, early, attempts }).toEqual({ missing: 0, doubled: 0, early: 0, attempts: total });
      expect(receiver.deliveries.length).toBe(total);
      expect(bySecond).toBe(total - byFirst);
    } finally {
      if (second) {
        const code = exitOf(second.worker);
        signalService(second.worker, "SIGTERM");
        expect(await code).toBe(0);
      }
      await first?.stop("SIGKILL");
      await receiver.close();
    }
  }

  it("a restart in the middle of a burst of 300 events loses none and doubles none", async () => {
    await burstRestart("at-delivery");
  }, 90_000);

  it("a restart while claimed events wait for their instant delivers them on time, once", async () => {
    await burstRestart("before-due");
  }, 90_000);

  it("hands prepared events back to Redis at once: it exits fast, and the next worker sends each once, on time", async () => {
    const receiver = await startReceiver();
    const { worker } = await startWorker({ WORKER_PREPARED_JOBS: "20000" });
    let second: ServiceProcess | undefined;
    try {
      const { eventQueue } = createTestApiDeps(context).deps;
      const { queue } = createTestApiDeps(context);
      const due = new Date(Date.now() + 8_000);
      const events = await scheduleBurst(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: due,
        count: 100,
      });
      // All prepared by this worker, none claimed yet.
      await expect.poll(() => queue.getJobCountByTypes("active")).toBe(100);
      const exited = exitOf(worker);
      const signalled = Date.now();
      signalService(worker, "SIGTERM");
      expect(await exited, worker.output()).toBe(0);
      // It did not wait for the events' time to let their jobs go.
      expect(Date.now() - signalled).toBeLessThan(5_000);
      expect(Date.now()).toBeLessThan(due.getTime() - context.config.CLAIM_LEAD_MS);
      expect(await queue.getJobCountByTypes("active")).toBe(0);
      expect(await queue.getJobCountByTypes("waiting", "delayed", "prioritized")).toBe(100);
      const ids = events.map((event) => event.id);
      expect(await context.db.event.count({ where: { id: { in: ids }, status: "Pending" } })).toBe(100);

      ({ worker: second } = await startWorker());
      await expect
        .poll(() => context.db.event.count({ where: { id: { in: ids }, status: "Sent" } }), { timeout: 20_000 })
        .toBe(100);
      for (const event of events) expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
      const arrivals = receiver.deliveries.map((delivery) => delivery.at);
      expect(Math.min(...arrivals)).toBeGreaterThanOrEqual(due.getTime());
      expect(Math.max(...arrivals) - due.getTime()).toBeLessThan(1_000);
    } finally {
      if (second) {
        const code = exitOf(second);
        signalService(second, "SIGTERM");
        expect(await code).toBe(0);
      }
      await worker.stop("SIGKILL");
      await receiver.close();
    }
  }, 60_000);
});
