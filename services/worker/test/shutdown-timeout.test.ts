import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { exitOf, type ServiceProcess, signalService, startWorkerProcess } from "../../../test/support/processes.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";

// Shutdown cut short (README, "Graceful shutdown"; packages/core/src/shutdown.ts): a worker whose
// delivery in flight outlasts SHUTDOWN_TIMEOUT_MS exits 1 when the timeout runs out, and a second
// signal exits 1 at once. The event is not lost: it stays Queued (claimed, no attempt recorded), and
// once the stopped worker's hold on its job has expired (JOB_LOCK_MS) another worker delivers it.
// The receiver got the cut-short request too, so it is delivered twice: the at-least-once window
// the README describes. Real worker processes.

/** Short, so that a job held by the stopped worker runs again on the next within seconds. */
const JOB_LOCK_MS = "2000";

let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

async function startWorker(env: Record<string, string>): Promise<ServiceProcess> {
  return (await startWorkerProcess(context.config, { LOG_LEVEL: "info", JOB_LOCK_MS, ...env })).worker;
}

/** A receiver that never answers the first request it gets (the delivery hangs) and 200 later. */
async function hangingReceiver(): Promise<Receiver> {
  const receiver: Receiver = await startReceiver({
    mount: (app) =>
      app.use((_req, _res, next) => {
        if (receiver.deliveries.length > 1) next();
      }),
  });
  return receiver;
}

/**
 * Starts a worker with `env`, gets one delivery hanging at the receiver, then calls `stop` with the
 * worker; checks that the event is left Queued without an attempt, and that the next worker delivers
 * it. Returns what `stop` returned.
 */
async function withHangingDelivery<T>(
  env: Record<string, string>,
  stop: (worker: ServiceProcess) => Promise<T>,
): Promise<T> {
  const receiver = await hangingReceiver();
  const worker = await startWorker(env);
  let next: ServiceProcess | undefined;
  try {
    const { eventQueue } = createTestApiDeps(context).deps;
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(Date.now() + 500),
    });
    await expect.poll(() => receiver.deliveriesOf(event.id).length).toBe(1);

    const result = await stop(worker);

    // Not lost: claimed and left Queued, with no attempt recorded for the request cut short.
    expect(await statusOf(context, event.id)).toBe("Queued");
    expect(await context.db.eventAttempt.count({ where: { eventId: event.id } })).toBe(0);

    next = await startWorker({});
    await expect.poll(() => statusOf(context, event.id), { timeout: 30_000 }).toBe("Sent");
    const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id }, include: { attempts: true } });
    expect(stored.attempts.map((attempt) => [attempt.attempt, attempt.responseStatus])).toEqual([[1, 200]]);
    // The cut-short request and the one that was answered.
    expect(receiver.deliveriesOf(event.id)).toHaveLength(2);
    return result;
  } finally {
    if (next) {
      const code = exitOf(next);
      signalService(next, "SIGTERM");
      expect(await code).toBe(0);
    }
    await worker.stop("SIGKILL");
    await receiver.close();
  }
}

describe("a worker's shutdown cut short", () => {
  it("exits 1 when SHUTDOWN_TIMEOUT_MS runs out, and the hanging event is delivered by the next worker", async () => {
    const timeoutMs = 1_500;
    const tookMs = await withHangingDelivery(
      // The attempt would wait 30 s for an answer: longer than the shutdown may take.
      { SHUTDOWN_TIMEOUT_MS: String(timeoutMs), DELIVERY_TIMEOUT_MS: "30000" },
      async (worker) => {
        const exited = exitOf(worker);
        const signalled = Date.now();
        signalService(worker, "SIGTERM");
        expect(await exited, worker.output()).toBe(1);
        const took = Date.now() - signalled;
        expect(worker.output()).toContain('"msg":"shutdown timed out"');
        expect(worker.output()).not.toContain('"msg":"stopped"');
        return took;
      },
    );
    // Not before the timeout, and not long after it.
    expect(tookMs).toBeGreaterThanOrEqual(timeoutMs);
    expect(tookMs).toBeLessThan(timeoutMs + 5_000);
  }, 90_000);

  it("exits 1 at once on a second signal, and the hanging event is delivered by the next worker", async () => {
    const tookMs = await withHangingDelivery(
      { SHUTDOWN_TIMEOUT_MS: "60000", DELIVERY_TIMEOUT_MS: "30000" },
      async (worker) => {
        const exited = exitOf(worker);
        signalService(worker, "SIGTERM");
        await expect.poll(() => worker.output().includes('"msg":"shutting down"')).toBe(true);
        // Still waiting for the hanging delivery.
        expect(worker.child.exitCode).toBeNull();
        const signalled = Date.now();
        signalService(worker, "SIGINT");
        expect(await exited, worker.output()).toBe(1);
        expect(worker.output()).toContain('"msg":"second signal: exiting now"');
        return Date.now() - signalled;
      },
    );
    // At once: far from the 30 s the delivery and the 60 s the shutdown would have taken.
    expect(tookMs).toBeLessThan(2_000);
  }, 90_000);
});
