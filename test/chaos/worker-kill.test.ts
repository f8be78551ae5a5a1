import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { scheduleBurst } from "../support/events.ts";
import { freePort, type ServiceProcess, startService, waitForHttp } from "../support/processes.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { countDeliveries } from "./chaos-report.ts";

// Chaos 3: a worker process is killed (SIGKILL: no shutdown) in the middle of a burst of 500.
// Its jobs' locks expire (JOB_LOCK_MS) and they run again on another worker: every event ends Sent.
// Deliveries that left before the kill but were not yet recorded are sent again: that is the
// at-least-once window, counted here as duplicates.

let context: TestContext;
let receiver: Receiver;
let first: ServiceProcess | undefined;

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: "100000" });
  receiver = await startReceiver({
    mount: (app) =>
      app.use((_req, _res, next) => {
        if (receiver.deliveries.length === 150 && first) first.child.kill("SIGKILL");
        setTimeout(next, 20);
      }),
  });
});

afterAll(async () => {
  await receiver.close();
  await context.close();
});

async function startWorker(): Promise<ServiceProcess> {
  const port = await freePort();
  const worker = startService("worker", {
    DATABASE_URL: context.config.DATABASE_URL,
    REDIS_URL: context.config.REDIS_URL,
    QUEUE_PREFIX: context.config.QUEUE_PREFIX,
    WORKER_HEALTH_PORT: String(port),
    ALLOW_PRIVATE_DESTINATIONS: "true",
    LOG_LEVEL: "warn",
    JOB_LOCK_MS: "3000",
    WORKER_PREPARED_JOBS: "100",
    RECONCILE_INTERVAL_MS: "1000",
  });
  await waitForHttp(`http://127.0.0.1:${port}/healthz`);
  return worker;
}

it("a worker killed mid-burst of 500: all end Sent, duplicates counted", async () => {
  const org = await createTestOrganization(context);
  first = await startWorker();
  const { scheduler } = createTestApiDeps(context).deps;
  const due = new Date(Date.now() + 4_000);
  const events = await scheduleBurst(context, scheduler, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: due,
    count: 500,
  });
  // The receiver kills the worker when the 150th delivery arrives.
  const worker = first;
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) resolve(worker.child.signalCode);
    else worker.child.once("exit", (_code, exitSignal) => resolve(exitSignal));
  });
  expect(signal).toBe("SIGKILL");
  const deliveredBeforeKill = receiver.deliveries.length;
  expect(deliveredBeforeKill).toBeGreaterThanOrEqual(150);
  expect(deliveredBeforeKill).toBeLessThan(500);

  const second = await startWorker();
  try {
    await expect
      .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), { timeout: 45_000 })
      .toBe(500);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const counts = countDeliveries("worker SIGKILL at the 150th of 500 deliveries", receiver, events, 500);
    expect(counts.lost).toBe(0);
    expect(await context.db.event.count({ where: { orgId: org.orgId, status: { not: "Sent" } } })).toBe(0);
    // Only deliveries in flight at the kill can be repeated: at most the jobs the worker held.
    expect(counts.duplicated).toBeLessThanOrEqual(100);
  } finally {
    expect(await second.stop()).toBe(0);
  }
}, 90_000);
