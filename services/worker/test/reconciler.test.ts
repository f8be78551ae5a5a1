import { createCronJob, createEvent, cronSchedulerId, eventJobId, fixedClock, scheduleOf } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { statusOf } from "../../../test/support/events.ts";
import { type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { createBookkeeping } from "../src/delivery/bookkeeping.ts";
import { createMaintenanceWorker } from "../src/maintenance/maintenance-worker.ts";
import { createReconciler } from "../src/maintenance/reconciler.ts";
import { createWorker } from "../src/worker.ts";

let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;

beforeAll(async () => {
  // A long interval: these tests call the reconciler themselves, except the end-to-end one.
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", RECONCILE_INTERVAL_MS: "600000" });
  org = await createTestOrganization(context);
  receiver = await startTestReceiver(context);
});

afterAll(() => context?.close());

function reconcilerAt(now = new Date()) {
  const { deps, queue, cronQueue } = createTestApiDeps(context);
  return {
    reconcile: createReconciler({
      db: context.db,
      clock: fixedClock(now),
      config: context.config,
      eventQueues: queue,
      cronQueue,
      eventQueue: deps.eventQueue,
      cronJobSchedulers: deps.cronJobSchedulers,
      logger: context.logger,
      redis: context.redis,
    }),
    queue,
    cronQueue,
  };
}

/** An event committed to Postgres but never put on the queue (as when Redis was down). */
async function unqueuedEvent(scheduledTime: Date) {
  const { event } = await createEvent(
    context.db,
    { orgId: org.orgId, payload: "p", destination: receiver.url, scheduledTime },
    new Date(),
    1000,
  );
  return event;
}

describe("reconciler", () => {
  it("queues a Pending event due soon whose job is missing, and leaves far ones for later", async () => {
    const soon = await unqueuedEvent(new Date(Date.now() + 2_000));
    // Beyond the prepare window (30 s) but within the reconciler's horizon: queued now, delayed.
    const inHorizon = await unqueuedEvent(new Date(Date.now() + 40_000));
    // Beyond ENQUEUE_HORIZON_MS (1 h): no job is its normal state.
    const far = await unqueuedEvent(new Date(Date.now() + 3_600_000));
    const { reconcile, queue } = reconcilerAt();
    // The feeder queues the events within the enqueue horizon the first time; their jobs are then
    // lost (as in a flush that kept the feeder's cursor): the missing-job check puts them back.
    await reconcile();
    await queue.remove(eventJobId(soon.id));
    await queue.remove(eventJobId(inHorizon.id));
    const report = await reconcile();
    expect(report.eventsFed).toBe(0);
    expect(report.eventsQueued).toBeGreaterThanOrEqual(2);
    // Due within the prepare window: ready for a worker to take at once.
    expect(await (await queue.getJob(eventJobId(soon.id)))?.getState()).toBe("waiting");
    expect(await (await queue.getJob(eventJobId(inHorizon.id)))?.isDelayed()).toBe(true);
    expect(await queue.getJob(eventJobId(far.id))).toBeUndefined();
    // Nothing to do the second time.
    expect((await reconcile()).eventsQueued).toBe(0);
  });

  it("does nothing of a pass until its pause lets it go, then queues the missing job", async () => {
    const soon = await unqueuedEvent(new Date(Date.now() + 2_000));
    const { reconcile, queue } = reconcilerAt();
    let release: () => void = () => {};
    const lull = new Promise<void>((resolve) => {
      release = resolve;
    });
    let pauses = 0;
    const pass = reconcile(() => {
      pauses += 1;
      return lull;
    });
    await expect.poll(() => pauses).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await queue.getJob(eventJobId(soon.id))).toBeUndefined();
    release();
    const report = await pass;
    // Fed as it entered the horizon, or queued as missing once an earlier pass moved the feeder on.
    expect(report.eventsFed + report.eventsQueued).toBeGreaterThanOrEqual(1);
    expect(await (await queue.getJob(eventJobId(soon.id)))?.getState()).toBe("waiting");
    // Before every part as well: each waited for the same lull.
    expect(pauses).toBeGreaterThan(6);
  });

  it("marks a Pending event Failed To Queue once its grace has passed", async () => {
    const event = await unqueuedEvent(new Date(Date.now() + 1_000));
    const later = new Date(Date.now() + 1_000 + context.config.QUEUE_GRACE_MS + 1_000);
    const report = await reconcilerAt(later).reconcile();
    expect(report.eventsFailedToQueue).toBeGreaterThanOrEqual(1);
    const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
    expect(stored.status).toBe("Failed To Queue");
    expect(stored.failedAt?.getTime()).toBe(later.getTime());
  });

  it("re-drives a Queued event whose job was lost, and the delivery resumes", async () => {
    const event = await unqueuedEvent(new Date(Date.now() + 200));
    // As if a worker had claimed it and then Redis lost its job.
    await context.db.event.update({ where: { id: event.id }, data: { status: "Queued" } });
    const report = await reconcilerAt().reconcile();
    expect(report.eventsRedriven).toBeGreaterThanOrEqual(1);
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    try {
      await expect.poll(() => statusOf(context, event.id)).toBe("Sent");
      expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });

  it("restores the scheduler of an Active cron job and removes the one of a disabled job", async () => {
    const active = await createCronJob(
      context.db,
      {
        orgId: org.orgId,
        expression: "*/5 * * * *",
        timezone: "Europe/Paris",
        destination: receiver.url,
        payload: "c",
      },
      new Date(),
      10,
    );
    const disabled = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "0 * * * *", timezone: "UTC", destination: receiver.url, payload: "d" },
      new Date(),
      10,
    );
    const { reconcile, cronQueue } = reconcilerAt();
    await context.db.cronJob.update({ where: { id: disabled.id }, data: { status: "Disabled" } });
    await createTestApiDeps(context).deps.cronJobSchedulers.schedule(disabled.id, scheduleOf(disabled));

    const report = await reconcile();
    expect(report.schedulersRestored).toBeGreaterThanOrEqual(1);
    expect(report.schedulersRemoved).toBeGreaterThanOrEqual(1);
    const restored = await cronQueue.getJobScheduler(cronSchedulerId(active.id));
    expect(restored).toMatchObject({ pattern: "lead 1000 */5 * * * *", tz: "Europe/Paris" });
    expect(await cronQueue.getJobScheduler(cronSchedulerId(disabled.id))).toBeUndefined();
  });

  it("re-drives a Queued cron run whose firing job was lost", async () => {
    const job = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination: receiver.url, payload: "r" },
      new Date(),
      10,
    );
    const scheduledFor = new Date(Math.floor(Date.now() / 60_000) * 60_000);
    const run = await context.db.cronRun.create({
      data: {
        id: `run_${"0".repeat(20)}${Date.now().toString(36).slice(-6)}`,
        cronJobId: job.id,
        orgId: org.orgId,
        cron: job.expression ?? "",
        scheduledFor,
        status: "Queued",
        requestData: "r",
        createdAt: new Date(Date.now() - 3_600_000),
      },
    });
    const report = await reconcilerAt().reconcile();
    expect(report.cronRunsRedriven).toBe(1);
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    try {
      await expect
        .poll(async () => (await context.db.cronRun.findUnique({ where: { id: run.id } }))?.status)
        .toBe("Sent");
      expect(receiver.deliveriesOf(run.id)).toHaveLength(1);
    } finally {
      await worker.stop();
    }
  });
});

describe("maintenance worker", () => {
  it("runs a task on its schedule, one run at a time across several workers", async () => {
    let running = 0;
    let most = 0;
    let runs = 0;
    const task = {
      name: "probe",
      everyMs: 100,
      maxRunMs: 5_000,
      run: async () => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 250));
        running--;
        runs++;
      },
    };
    const workers = [1, 2, 3].map(() =>
      createMaintenanceWorker(context.config, context.redis.duplicate(), [task], context.logger),
    );
    await Promise.all(workers.map((worker) => worker.start()));
    try {
      await expect.poll(() => runs, { timeout: 10_000 }).toBeGreaterThanOrEqual(4);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
    expect(most).toBe(1);
  });

  it("starts a run only once the worker's deliveries due within the guard have passed and gone quiet", async () => {
    // A burst's claim 600 ms away, and its sends answered 300 ms after it.
    const instant = Date.now() + 600;
    const quietAt = instant + 300;
    const bookkeeping = createBookkeeping({
      waiting: 0,
      nextInstant: () => (Date.now() < instant ? instant : undefined),
      whenIdle: () => new Promise((resolve) => setTimeout(resolve, Math.max(0, quietAt - Date.now()))),
    });
    const runsStartedAt: number[] = [];
    const task = {
      name: "lull-probe",
      everyMs: 60_000,
      maxRunMs: 5_000,
      run: async () => {
        runsStartedAt.push(Date.now());
      },
    };
    const worker = createMaintenanceWorker(
      context.config,
      context.redis.duplicate(),
      [task],
      context.logger,
      bookkeeping,
    );
    await worker.start();
    try {
      await expect.poll(() => runsStartedAt.length, { timeout: 5_000 }).toBe(1);
    } finally {
      await worker.stop();
    }
    expect(runsStartedAt[0]).toBeGreaterThanOrEqual(quietAt);
  });
});
