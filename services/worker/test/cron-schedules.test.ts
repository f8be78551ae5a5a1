import {
  CRON_LEAD_MS,
  type CronJobWithPolicy,
  createCronJob,
  cronSchedulerId,
  fixedClock,
  jitterOf,
  scheduleOf,
  startCronRun,
} from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  deleteKeys,
  PER_SECOND_CRON_SETTINGS,
  reconcilerSettled,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createReconciler } from "../src/maintenance/reconciler.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// Complete recurring schedules through real workers (contract §10.4): cron jobs made with core's
// createCronJob and put on their real job schedulers (the repeat strategy fires them when
// nextFiring says), delivered to receivers on loopback, with intervals and six-field expressions
// of a few seconds so that each case takes a few seconds. The reconciler runs once at each worker's
// start (PER_SECOND_CRON_SETTINGS); the Redis flush case runs it itself.

/** A firing whose job starts more than this after its time is missed (catchUp skip): short, for the outage cases. */
const MISSED_AFTER_MS = 1_500;
/** A delivery on time leaves within this of its (jittered) time, on a loaded test machine. */
const ON_TIME_MS = 500;

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;
let slow: Receiver;

const startWorker = async () => {
  const started = createWorker({ ...createTestApiDeps(context).deps });
  await started.start();
  return started;
};

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    RETRY_DELAYS_MS: "200,200",
    CRON_MISSED_AFTER_MS: String(MISSED_AFTER_MS),
    ...PER_SECOND_CRON_SETTINGS,
  });
  org = await createTestOrganization(context);
  receiver = await startReceiver();
  // Answers 2.5 s after each request: a run stays undecided over the next two firings of a PT1S job.
  slow = await startReceiver({ delayMs: 2_500 });
  worker = await startWorker();
  await reconcilerSettled(context);
});

afterAll(async () => {
  await worker.stop();
  await receiver.close();
  await slow.close();
  await context.close();
});

type Timing = Partial<Omit<Parameters<typeof createCronJob>[1], "orgId" | "destination" | "payload" | "timezone">>;

/** A cron job of the file's organization, Active, on its job scheduler; its deliveries go to `to`'s `/<name>`. */
async function scheduled(name: string, timing: Timing, to: Receiver = receiver): Promise<CronJobWithPolicy> {
  const job = await createCronJob(
    context.db,
    {
      orgId: org.orgId,
      expression: null,
      timezone: "UTC",
      destination: to.url.replace("/hook", `/${name}`),
      payload: name,
      ...timing,
    },
    new Date(),
    100,
  );
  await createTestApiDeps(context).deps.cronJobSchedulers.schedule(job.id, scheduleOf(job));
  return job;
}

const every = (text: string, ms: number) => ({ every: { text, ms } });

/** Stops a job at the end of its case: no more firings, none caught up. */
async function stop(job: { id: string }): Promise<void> {
  await context.db.cronJob.update({ where: { id: job.id }, data: { status: "Disabled" } });
  await createTestApiDeps(context).deps.cronJobSchedulers.unschedule(job.id);
}

const runsOf = (jobId: string) =>
  context.db.cronRun.findMany({ where: { cronJobId: jobId }, orderBy: { scheduledFor: "asc" } });
const sentCount = (jobId: string) => context.db.cronRun.count({ where: { cronJobId: jobId, status: "Sent" } });
const statusOf = async (jobId: string) => (await context.db.cronJob.findUniqueOrThrow({ where: { id: jobId } })).status;
const schedulerOf = (jobId: string) => createTestApiDeps(context).cronQueue.getJobScheduler(cronSchedulerId(jobId));
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));
const times = (runs: { scheduledFor: Date }[]) => runs.map((run) => run.scheduledFor.getTime());
/** The one delivery of a run (its `webhook-id` is the run id), failing when there is none or more. */
function onlyDeliveryOf(to: Receiver, runId: string) {
  const deliveries = to.deliveriesOf(runId);
  expect(deliveries, `deliveries of ${runId}`).toHaveLength(1);
  return deliveries[0] as (typeof deliveries)[number];
}

/** One reconciler run, now, as a worker's maintenance would make it. */
function reconcileNow() {
  const { deps, queue, cronQueue } = createTestApiDeps(context);
  return createReconciler({
    db: context.db,
    clock: fixedClock(new Date()),
    config: context.config,
    eventQueues: queue,
    cronQueue,
    eventQueue: deps.eventQueue,
    cronJobSchedulers: deps.cronJobSchedulers,
    logger: context.logger,
    redis: context.redis,
  })();
}

describe("timing", () => {
  it("every PT2S with maxRuns 3 runs three times 2 s apart, then the job is Completed and fires no more", async () => {
    const job = await scheduled("max-runs", { ...every("PT2S", 2_000), maxRuns: 3 });
    await expect.poll(() => statusOf(job.id), { timeout: 15_000 }).toBe("Completed");
    await expect.poll(() => sentCount(job.id)).toBe(3);

    const runs = await runsOf(job.id);
    const since = job.scheduleSince.getTime();
    expect(times(runs)).toEqual([since + 2_000, since + 4_000, since + 6_000]);
    for (const run of runs) {
      expect(run).toMatchObject({ status: "Sent", attempts: 1, cron: "PT2S", requestData: "max-runs" });
      const delivery = onlyDeliveryOf(receiver, run.id);
      expect(delivery.at - run.scheduledFor.getTime()).toBeLessThan(ON_TIME_MS);
    }
    // The run that reached the limit took the scheduler off; a firing after it would deliver nothing.
    expect(await schedulerOf(job.id)).toBeUndefined();
    expect((await context.db.cronJob.findUniqueOrThrow({ where: { id: job.id } })).runCount).toBe(3);
    await sleepUntil(since + 8_500);
    expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(3);
    expect(receiver.deliveries.filter((delivery) => delivery.path === "/max-runs")).toHaveLength(3);
  });

  it("a six-field expression fires on its seconds", async () => {
    const job = await scheduled("six-fields", { expression: "*/3 * * * * *" });
    await expect.poll(() => sentCount(job.id), { timeout: 15_000 }).toBeGreaterThanOrEqual(3);
    await stop(job);

    const runs = (await runsOf(job.id)).filter((run) => run.status === "Sent");
    for (const run of runs) {
      expect(run.scheduledFor.getUTCSeconds() % 3).toBe(0);
      expect(run.scheduledFor.getUTCMilliseconds()).toBe(0);
      expect(run.cron).toBe("*/3 * * * * *");
      expect(onlyDeliveryOf(receiver, run.id).at - run.scheduledFor.getTime()).toBeLessThan(ON_TIME_MS);
    }
    const firings = times(runs);
    expect(firings.slice(1).map((at, n) => at - (firings[n] as number))).toEqual(firings.slice(1).map(() => 3_000));
  });

  it("runs only inside [startAt, endAt], then the job is Completed", async () => {
    const startAt = Math.ceil(Date.now() / 1_000) * 1_000 + 2_000;
    const endAt = startAt + 2_500;
    const job = await scheduled("window", {
      ...every("PT1S", 1_000),
      startAt: new Date(startAt),
      endAt: new Date(endAt),
    });
    await expect.poll(() => statusOf(job.id), { timeout: 15_000 }).toBe("Completed");
    await expect.poll(() => sentCount(job.id)).toBe(3);

    const runs = await runsOf(job.id);
    expect(times(runs)).toEqual([startAt, startAt + 1_000, startAt + 2_000]);
    for (const run of runs) expect(onlyDeliveryOf(receiver, run.id).at).toBeGreaterThanOrEqual(startAt);
    // The last firing in the window completed the job and took its scheduler off.
    expect(await schedulerOf(job.id)).toBeUndefined();
    await sleepUntil(endAt + 1_500);
    expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(3);
  });

  it("jitter: each run is sent at its firing plus jitterOf (within jitterMs), varied; its scheduledFor stays the firing", async () => {
    const jitterMs = 900;
    const job = await scheduled("jitter", { ...every("PT1S", 1_000), jitterMs });
    await expect.poll(() => sentCount(job.id), { timeout: 15_000 }).toBeGreaterThanOrEqual(6);
    await stop(job);

    const runs = (await runsOf(job.id)).filter((run) => run.status === "Sent");
    const since = job.scheduleSince.getTime();
    const offsets: number[] = [];
    for (const run of runs) {
      const at = run.scheduledFor.getTime();
      // The firing time itself: one interval after another from the job's first.
      expect((at - since) % 1_000).toBe(0);
      const jitter = jitterOf(job.id, at, jitterMs);
      expect(jitter).toBeGreaterThanOrEqual(0);
      expect(jitter).toBeLessThanOrEqual(jitterMs);
      const sentAfter = onlyDeliveryOf(receiver, run.id).at - at;
      // Sent at its jittered time, never before it (the firing's job waits in the queue until then).
      expect(sentAfter).toBeGreaterThanOrEqual(jitter - 5);
      expect(sentAfter - jitter).toBeLessThan(ON_TIME_MS);
      offsets.push(sentAfter);
    }
    expect(Math.max(...offsets) - Math.min(...offsets)).toBeGreaterThan(100);
    expect(new Set(runs.map((run) => jitterOf(job.id, run.scheduledFor.getTime(), jitterMs))).size).toBeGreaterThan(3);
  });
});

describe("overlap", () => {
  it("skip: a firing while the previous run is undecided is recorded Skipped and not sent", async () => {
    const job = await scheduled("overlap-skip", { ...every("PT1S", 1_000), overlap: "skip" }, slow);
    await expect
      .poll(async () => (await runsOf(job.id)).filter((run) => run.status === "Sent").length >= 2, { timeout: 15_000 })
      .toBe(true);
    await stop(job);

    const runs = await runsOf(job.id);
    const sent = runs.filter((run) => run.status === "Sent");
    const skipped = runs.filter((run) => run.status === "Skipped");
    expect(skipped.length).toBeGreaterThanOrEqual(2);
    for (const run of skipped) {
      expect(run).toMatchObject({ attempts: 0, responseStatus: null });
      expect(slow.deliveriesOf(run.id)).toHaveLength(0);
    }
    // Every firing between the first and the last made a run, Sent or Skipped.
    const firings = times(runs);
    expect(firings.slice(1).map((at, n) => at - (firings[n] as number))).toEqual(firings.slice(1).map(() => 1_000));
    // No two sends at once: each started after the one before had been answered (2.5 s).
    const arrivals = sent.map((run) => onlyDeliveryOf(slow, run.id).at);
    for (let n = 1; n < arrivals.length; n++) {
      expect((arrivals[n] as number) - (arrivals[n - 1] as number)).toBeGreaterThanOrEqual(2_450);
    }
  });

  it("buffer: one firing waits and is sent as the previous run ends; more are Skipped", async () => {
    const job = await scheduled("overlap-buffer", { ...every("PT1S", 1_000), overlap: "buffer" }, slow);
    await expect
      .poll(async () => (await runsOf(job.id)).filter((run) => run.status === "Sent").length >= 2, { timeout: 15_000 })
      .toBe(true);
    await stop(job);

    const runs = await runsOf(job.id);
    const [first, second] = runs;
    // The firing after the first waited for it, and went as soon as the first was answered.
    expect(first?.status).toBe("Sent");
    expect(second?.status).toBe("Sent");
    const firstAt = onlyDeliveryOf(slow, first?.id as string).at;
    const secondAt = onlyDeliveryOf(slow, second?.id as string).at;
    expect(secondAt - firstAt).toBeGreaterThanOrEqual(2_450);
    expect(secondAt - firstAt).toBeLessThan(2_500 + ON_TIME_MS);
    // The one after that found one waiting already.
    expect(runs[2]?.status).toBe("Skipped");
    expect(slow.deliveriesOf(runs[2]?.id as string)).toHaveLength(0);
    const arrivals = runs.filter((run) => run.status === "Sent").map((run) => onlyDeliveryOf(slow, run.id).at);
    for (let n = 1; n < arrivals.length; n++) {
      expect((arrivals[n] as number) - (arrivals[n - 1] as number)).toBeGreaterThanOrEqual(2_450);
    }
  });
});

describe("catch-up after every worker was down", () => {
  /**
   * A PT2S job delivered once (at T), every worker stopped over its firings of T+2, T+4 and T+6 s,
   * a new worker started at T+7 s; returns the runs once the firing of T+8 s (on time) is Sent.
   */
  async function outage(name: string, catchUp: "skip" | "latest" | "all") {
    const job = await scheduled(name, { ...every("PT2S", 2_000), catchUp });
    await expect.poll(() => sentCount(job.id), { timeout: 10_000 }).toBe(1);
    await worker.stop();
    const [first] = await runsOf(job.id);
    const t = first?.scheduledFor.getTime() as number;
    await sleepUntil(t + 7_000);
    worker = await startWorker();
    await expect
      .poll(
        async () =>
          (await runsOf(job.id)).some((run) => run.scheduledFor.getTime() >= t + 8_000 && run.status === "Sent"),
        {
          timeout: 10_000,
        },
      )
      .toBe(true);
    await stop(job);
    const runs = (await runsOf(job.id)).filter((run) => run.scheduledFor.getTime() <= t + 8_000);
    for (const run of runs) expect(onlyDeliveryOf(receiver, run.id)).toBeDefined();
    return { t, runs };
  }

  it("latest: exactly one run for the missed firings, the most recent one, delivered once", async () => {
    const { t, runs } = await outage("catch-up-latest", "latest");
    expect(times(runs)).toEqual([t, t + 6_000, t + 8_000]);
    expect(runs.map((run) => run.status)).toEqual(["Sent", "Sent", "Sent"]);
  });

  it("all: a run for each missed firing, each with its own scheduledFor, delivered once", async () => {
    const { t, runs } = await outage("catch-up-all", "all");
    expect(times(runs)).toEqual([t, t + 2_000, t + 4_000, t + 6_000, t + 8_000]);
    expect(runs.every((run) => run.status === "Sent")).toBe(true);
  });

  it("skip: none of the missed firings is delivered", async () => {
    const { t, runs } = await outage("catch-up-skip", "skip");
    expect(times(runs)).toEqual([t, t + 8_000]);
  });
});

describe("firings of one job decided together on several workers", () => {
  /** A job with no scheduler (firing hourly from now), whose firings the test makes itself. */
  const idle = (name: string, timing: Timing) =>
    createCronJob(
      context.db,
      {
        orgId: org.orgId,
        expression: null,
        ...every("PT1H", 3_600_000),
        timezone: "UTC",
        destination: receiver.url.replace("/hook", `/${name}`),
        payload: name,
        ...timing,
      },
      new Date(),
      100,
    );
  /** Eight firings of the job at once, each as another worker's (times a few ms apart, all on time). */
  const fireTogether = (jobId: string) => {
    const now = Date.now();
    return Promise.all(
      Array.from({ length: 8 }, (_, n) =>
        startCronRun(context.db, jobId, new Date(now - 100 + n * 10), new Date(), `worker-${n}`, {
          missedAfterMs: MISSED_AFTER_MS,
          runsKeptPerJob: 1_000,
        }),
      ),
    );
  };
  const kinds = (results: { kind: string }[]) =>
    results
      .map((result) => result.kind)
      .reduce<Record<string, number>>((count, kind) => {
        count[kind] = (count[kind] ?? 0) + 1;
        return count;
      }, {});

  it("maxRuns: exactly that many runs, and the job Completed by the last", async () => {
    const job = await idle("together-max", { maxRuns: 3 });
    const results = await fireTogether(job.id);
    expect(kinds(results)).toEqual({ started: 3, skipped: 5 });
    expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(3);
    expect(await context.db.cronJob.findUniqueOrThrow({ where: { id: job.id } })).toMatchObject({
      status: "Completed",
      runCount: 3,
    });
  });

  // Left Active without a scheduler, they would be the reconciler's to restore in the cases below.
  afterAll(async () => {
    await context.db.cronJob.updateMany({
      where: { payload: { startsWith: "together-" } },
      data: { status: "Disabled" },
    });
  });

  it("overlap skip: one run goes, the others are recorded Skipped", async () => {
    const job = await idle("together-skip", { overlap: "skip" });
    expect(kinds(await fireTogether(job.id))).toEqual({ started: 1, skipped: 7 });
    const runs = await runsOf(job.id);
    expect(runs.map((run) => run.status).sort()).toEqual(["Queued", ...Array(7).fill("Skipped")]);
    expect((await context.db.cronJob.findUniqueOrThrow({ where: { id: job.id } })).runCount).toBe(1);
  });

  it("overlap buffer: one run goes, one waits, the others are recorded Skipped", async () => {
    const job = await idle("together-buffer", { overlap: "buffer" });
    expect(kinds(await fireTogether(job.id))).toEqual({ started: 1, waiting: 1, skipped: 6 });
    const runs = await runsOf(job.id);
    expect(runs.filter((run) => run.status === "Queued")).toHaveLength(2);
    expect(runs.filter((run) => run.status === "Queued" && run.claimedBy === null)).toHaveLength(1);
  });
});

it("a scheduler that lost its pending firing is set again, and the firings it missed caught up", async () => {
  const job = await scheduled("stuck", { ...every("PT2S", 2_000), catchUp: "all" });
  await expect.poll(() => sentCount(job.id), { timeout: 10_000 }).toBe(1);
  const t = Math.max(...times(await runsOf(job.id)));
  // The scheduler stays; its next firing's job goes (as a failover losing the last writes might).
  // That job is due a lead before its firing (schedule.ts).
  const { cronQueue } = createTestApiDeps(context);
  await expect.poll(async () => (await schedulerOf(job.id))?.next).toBe(t + 2_000 - CRON_LEAD_MS);
  const pending = `repeat:${cronSchedulerId(job.id)}:${t + 2_000 - CRON_LEAD_MS}`;
  await context.redis.zrem(cronQueue.toKey("delayed"), pending);
  await context.redis.del(cronQueue.toKey(pending));
  // Its firing is overdue by CRON_MISSED_AFTER_MS, and the next one passed too.
  await sleepUntil(t + 4_300);
  expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(1);
  const report = await reconcileNow();
  expect(report).toMatchObject({ schedulersRestored: 1, cronRunsCaughtUp: 2 });
  await expect
    .poll(async () => times((await runsOf(job.id)).filter((run) => run.status === "Sent")), { timeout: 10_000 })
    .toEqual(expect.arrayContaining([t, t + 2_000, t + 4_000, t + 6_000]));
  await stop(job);
  const runs = (await runsOf(job.id)).filter((run) => run.scheduledFor.getTime() <= t + 6_000);
  expect(times(runs)).toEqual([t, t + 2_000, t + 4_000, t + 6_000]);
  for (const run of runs) onlyDeliveryOf(receiver, run.id);
});

it("the reconciler completes a job whose window ended while nothing fired, its missed firing caught up first (latest)", async () => {
  const startAt = Math.ceil(Date.now() / 1_000) * 1_000 + 1_000;
  // Firings at startAt and one second later; never on a scheduler, as if no worker ran over the window.
  const unscheduled = (name: string, catchUp: "skip" | "latest") =>
    createCronJob(
      context.db,
      {
        orgId: org.orgId,
        expression: null,
        ...every("PT1S", 1_000),
        startAt: new Date(startAt),
        endAt: new Date(startAt + 1_500),
        catchUp,
        timezone: "UTC",
        destination: receiver.url.replace("/hook", `/${name}`),
        payload: name,
      },
      new Date(),
      100,
    );
  const skip = await unscheduled("ended-skip", "skip");
  const latest = await unscheduled("ended-latest", "latest");
  await sleepUntil(startAt + 1_700);

  expect(await reconcileNow()).toMatchObject({ schedulersRestored: 0, cronJobsCompleted: 2, cronRunsCaughtUp: 1 });
  expect(await statusOf(skip.id)).toBe("Completed");
  expect(await statusOf(latest.id)).toBe("Completed");
  expect(await runsOf(skip.id)).toEqual([]);
  // The run made before the job completed is delivered all the same.
  await expect.poll(() => sentCount(latest.id)).toBe(1);
  const [run] = await runsOf(latest.id);
  expect(run?.scheduledFor.getTime()).toBe(startAt + 1_000);
  onlyDeliveryOf(receiver, run?.id as string);
  expect(await schedulerOf(skip.id)).toBeUndefined();
  expect(await schedulerOf(latest.id)).toBeUndefined();
});

it("a Redis flush of the cron queue neither invents nor drops catch-up runs", async () => {
  const all = await scheduled("flush-all", { ...every("PT2S", 2_000), catchUp: "all" });
  const latest = await scheduled("flush-latest", { ...every("PT2S", 2_000), catchUp: "latest" });
  await expect.poll(async () => (await sentCount(all.id)) >= 1 && (await sentCount(latest.id)) >= 1).toBe(true);
  // Every key of the cron queue: the schedulers and their pending firings are gone.
  await deleteKeys(context.redis, `${context.config.QUEUE_PREFIX}:cron:*`);
  expect(await schedulerOf(all.id)).toBeUndefined();
  const lastBefore = async (jobId: string) => Math.max(...times(await runsOf(jobId)));
  const [tAll, tLatest] = [await lastBefore(all.id), await lastBefore(latest.id)];
  // Two firings of each pass with no scheduler, then the reconciler runs.
  await sleepUntil(Math.max(tAll, tLatest) + 4_500);
  const report = await reconcileNow();
  expect(report).toMatchObject({ schedulersRestored: 2, cronRunsCaughtUp: 3 });
  expect(await schedulerOf(all.id)).toBeDefined();

  // all: both missed firings, then the restored scheduler's next one.
  await expect
    .poll(async () =>
      times((await runsOf(all.id)).filter((run) => run.status === "Sent" && run.scheduledFor.getTime() > tAll)),
    )
    .toEqual(expect.arrayContaining([tAll + 2_000, tAll + 4_000, tAll + 6_000]));
  // latest: the most recent missed firing only.
  await expect
    .poll(async () =>
      times((await runsOf(latest.id)).filter((run) => run.status === "Sent" && run.scheduledFor.getTime() > tLatest)),
    )
    .toEqual(expect.arrayContaining([tLatest + 4_000, tLatest + 6_000]));
  // A second look finds nothing missing: nothing is caught up twice.
  expect(await reconcileNow()).toMatchObject({
    schedulersRestored: 0,
    cronRunsCaughtUp: 0,
  });
  await stop(all);
  await stop(latest);

  const allRuns = (await runsOf(all.id)).filter((run) => run.scheduledFor.getTime() <= tAll + 6_000);
  expect(times(allRuns).filter((at) => at >= tAll)).toEqual([tAll, tAll + 2_000, tAll + 4_000, tAll + 6_000]);
  const latestRuns = (await runsOf(latest.id)).filter((run) => run.scheduledFor.getTime() <= tLatest + 6_000);
  expect(times(latestRuns).filter((at) => at >= tLatest)).toEqual([tLatest, tLatest + 4_000, tLatest + 6_000]);
  for (const run of [...allRuns, ...latestRuns]) onlyDeliveryOf(receiver, run.id);
});
