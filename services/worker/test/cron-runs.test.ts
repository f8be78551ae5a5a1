import { init, webhookHandler } from "@jiter/node";
import {
  CRON_RUN_JOB,
  type CronJobData,
  createCronJob,
  cronSchedulerId,
  recordCronRunAttempt,
  startCronRun,
  takeOverCronRun,
  withdrawWorker,
} from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  announceLiveWorker,
  createTestApiDeps,
  fireEverySecond,
  PER_SECOND_CRON_SETTINGS,
  reconcilerSettled,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import type { Receiver } from "../../../test/support/receiver.ts";
import { createDeliveryContext } from "../../../test/support/worker.ts";

// Cron runs through the worker. BullMQ schedulers are driven here by a six-field (per-second)
// pattern in place of the jobs' own every-minute expression, so runs come every second; the jobs'
// own timing (intervals, six fields, windows, maxRuns, catch-up, overlap, jitter) is in
// cron-schedules.test.ts.

let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;
let verified = 0;
let failing = false;

beforeAll(async () => {
  ({ context, org, receiver } = await createDeliveryContext(
    { RETRY_DELAYS_MS: "200,200", ...PER_SECOND_CRON_SETTINGS },
    {
      status: () => (failing ? 500 : 200),
      mount: (app) =>
        app.post(
          "/verified",
          webhookHandler(async () => {
            verified++;
          }),
        ),
    },
  ));
  init({ apiKey: org.apiKey, signingSecret: org.signingSecret, baseUrl: "http://127.0.0.1:1/api" });
  // Its first run over, the reconciler stays away from the per-second schedulers installed below.
  await reconcilerSettled(context);
});

/** An Active cron job of the file's organization firing every minute. */
const everyMinuteTo = (destination: string, payload: string) =>
  createCronJob(
    context.db,
    { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination, payload },
    new Date(),
    10,
  );

afterAll(() => context?.close());

it("delivers each firing as one run, signed with the run id, and records it", async () => {
  const job = await everyMinuteTo(receiver.url.replace("/hook", "/verified"), '{"tick":true}');
  const queue = await fireEverySecond(context, job.id);
  await expect
    .poll(() => context.db.cronRun.count({ where: { cronJobId: job.id, status: "Sent" } }))
    .toBeGreaterThanOrEqual(2);
  await queue.removeJobScheduler(cronSchedulerId(job.id));

  const runs = await context.db.cronRun.findMany({
    where: { cronJobId: job.id, status: "Sent" },
    orderBy: { scheduledFor: "asc" },
  });
  const [first] = runs;
  expect(first).toMatchObject({
    attempts: 1,
    responseStatus: 200,
    requestData: '{"tick":true}',
    cron: "* * * * *",
    error: null,
  });
  expect(first?.scheduledFor.getUTCMilliseconds()).toBe(0);
  const deliveries = receiver.deliveriesOf(first?.id as string);
  expect(deliveries).toHaveLength(1);
  expect(JSON.parse(deliveries[0]?.rawBody ?? "{}")).toEqual({
    payload: '{"tick":true}',
    scheduledTime: first?.scheduledFor.toISOString(),
  });
  expect(verified).toBeGreaterThanOrEqual(2);
  // The response body is kept (first 1024 bytes).
  expect(first?.responseData).toBe("OK");
});

it("retries a failing run and ends it Failed To Send with the last response", async () => {
  failing = true;
  const job = await everyMinuteTo(receiver.url, "x");
  const queue = await fireEverySecond(context, job.id);
  await expect
    .poll(() => context.db.cronRun.count({ where: { cronJobId: job.id, status: "Failed To Send" } }))
    .toBeGreaterThanOrEqual(1);
  await queue.removeJobScheduler(cronSchedulerId(job.id));
  failing = false;
  const run = await context.db.cronRun.findFirstOrThrow({ where: { cronJobId: job.id, status: "Failed To Send" } });
  expect(run).toMatchObject({ attempts: 3, responseStatus: 500, error: "Receiver answered 500" });
  expect(run.responseData).toBe('{"received":false}');
  expect(receiver.deliveriesOf(run.id)).toHaveLength(3);
});

it("creates one run per scheduled time: a duplicate firing delivers nothing new", async () => {
  const job = await everyMinuteTo(receiver.url, "y");
  // Two firings of the same cron job and minute on the cron queue: one as the job scheduler makes
  // it (the time in its id), then one as a re-driven run (the time in its data). A BullMQ job
  // completes once its run is final or the firing was skipped.
  const at = Math.floor(Date.now() / 60_000) * 60_000;
  const { cronQueue } = createTestApiDeps(context);
  const fire = async (firing: { data: CronJobData; opts?: { jobId: string } }) => {
    const added = await cronQueue.add(CRON_RUN_JOB, firing.data, firing.opts);
    await expect.poll(() => cronQueue.getJobState(added.id as string)).toBe("completed");
  };
  await fire({ data: { cronJobId: job.id }, opts: { jobId: `repeat:${cronSchedulerId(job.id)}:${at}` } });
  const [run] = await context.db.cronRun.findMany({ where: { cronJobId: job.id } });
  expect(run).toMatchObject({ status: "Sent", attempts: 1, scheduledFor: new Date(at) });
  expect(receiver.deliveriesOf(run?.id as string)).toHaveLength(1);

  await fire({ data: { cronJobId: job.id, scheduledFor: at } });
  expect(await context.db.cronRun.findMany({ where: { cronJobId: job.id } })).toEqual([run]);
  expect(receiver.deliveriesOf(run?.id as string)).toHaveLength(1);
  const deliveriesOfTheMinute = receiver.deliveries.filter(
    (delivery) => delivery.rawBody === JSON.stringify({ payload: "y", scheduledTime: new Date(at).toISOString() }),
  );
  expect(deliveriesOfTheMinute).toHaveLength(1);
});

it("delivers once when two firings of the same run arrive together", async () => {
  const job = await everyMinuteTo(receiver.url, "together");
  const at = Math.floor(Date.now() / 60_000) * 60_000;
  const { cronQueue } = createTestApiDeps(context);
  // Added in one round trip, so the worker takes both while the first one's run is still Queued.
  const added = await cronQueue.addBulk([
    { name: CRON_RUN_JOB, data: { cronJobId: job.id }, opts: { jobId: `repeat:${cronSchedulerId(job.id)}:${at}` } },
    { name: CRON_RUN_JOB, data: { cronJobId: job.id, scheduledFor: at } },
  ]);
  for (const firing of added) {
    await expect.poll(() => cronQueue.getJobState(firing.id as string)).toBe("completed");
  }
  const runs = await context.db.cronRun.findMany({ where: { cronJobId: job.id } });
  expect(runs).toHaveLength(1);
  expect(runs[0]).toMatchObject({ status: "Sent", attempts: 1 });
  expect(receiver.deliveriesOf(runs[0]?.id as string)).toHaveLength(1);
});

it("refuses a second run of a scheduled time already delivered", async () => {
  const job = await everyMinuteTo(receiver.url, "y");
  const at = new Date(Math.ceil(Date.now() / 60_000) * 60_000);
  const first = await startCronRun(context.db, job.id, at, new Date(), "worker-a");
  expect(first.kind).toBe("started");
  await context.db.cronRun.updateMany({ where: { cronJobId: job.id }, data: { status: "Sent" } });
  const duplicate = await startCronRun(context.db, job.id, at, new Date(), "worker-a");
  expect(duplicate).toEqual({ kind: "skipped", reason: "run already finished" });
  expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(1);
});

it("skips firings of a disabled job", async () => {
  const job = await everyMinuteTo(receiver.url, "z");
  await context.db.cronJob.update({ where: { id: job.id }, data: { status: "Disabled" } });
  const result = await startCronRun(context.db, job.id, new Date(), new Date(), "worker-a");
  expect(result).toEqual({ kind: "skipped", reason: "cron job is missing or disabled" });
  expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(0);
});

it("a firing of a run that another live worker sends steps aside, and sends it once that worker is gone", async () => {
  const job = await everyMinuteTo(receiver.url, "owned");
  const at = Math.floor(Date.now() / 60_000) * 60_000;
  // The run is being sent by another worker, alive, whose lock on the firing ran out.
  const owner = "other-live-worker";
  await announceLiveWorker(context, owner);
  const started = await startCronRun(context.db, job.id, new Date(at), new Date(), owner);
  expect(started.kind).toBe("started");
  const { cronQueue } = createTestApiDeps(context);
  const firing = await cronQueue.add(CRON_RUN_JOB, { cronJobId: job.id, scheduledFor: at });
  // Taken, found sent by its live owner, and put back in the queue for later.
  await expect.poll(() => cronQueue.getJobState(firing.id as string)).toBe("delayed");
  const [run] = await context.db.cronRun.findMany({ where: { cronJobId: job.id } });
  expect(run).toMatchObject({ status: "Queued", attempts: 0, claimedBy: owner });
  expect(receiver.deliveriesOf(run?.id as string)).toHaveLength(0);

  await withdrawWorker(context.redis, context.config.QUEUE_PREFIX, owner);
  await expect.poll(() => cronQueue.getJobState(firing.id as string), { timeout: 15_000 }).toBe("completed");
  const sent = await context.db.cronRun.findUniqueOrThrow({ where: { id: run?.id as string } });
  expect(sent).toMatchObject({ status: "Sent", attempts: 1 });
  expect(sent.claimedBy).toMatch(/^[0-9a-f]{16}$/);
  expect(receiver.deliveriesOf(sent.id)).toHaveLength(1);
});

it("an attempt that hands a run back for a retry leaves it to whichever worker takes the retry", async () => {
  const job = await everyMinuteTo(receiver.url, "handed");
  const at = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const started = await startCronRun(context.db, job.id, at, new Date(), "worker-a");
  if (started.kind !== "started") throw new Error(`the run was ${started.kind}`);
  const attempt = {
    responseStatus: 500,
    responseData: null,
    error: "Receiver answered 500",
    durationMs: 3,
    at: new Date(),
  };
  expect(
    await recordCronRunAttempt(context.db, started.started.run.id, attempt, false, { maxAttempts: 3, last: false }),
  ).toEqual({
    attempt: 1,
    final: null,
  });
  expect((await context.db.cronRun.findUniqueOrThrow({ where: { id: started.started.run.id } })).claimedBy).toBeNull();

  // The retry's firing, in another worker: nobody holds the run, so it is taken over at once.
  const retry = await startCronRun(context.db, job.id, at, new Date(), "worker-b");
  expect(retry).toMatchObject({ kind: "resumed", owner: { workerId: null, since: attempt.at } });
  if (retry.kind !== "resumed") throw new Error(`the retry was ${retry.kind}`);
  expect(await takeOverCronRun(context.db, started.started.run.id, retry.owner, "worker-b", new Date())).toBe(true);
  // A second copy of that firing, from the same reading, loses.
  expect(await takeOverCronRun(context.db, started.started.run.id, retry.owner, "worker-c", new Date())).toBe(false);
  expect((await context.db.cronRun.findUniqueOrThrow({ where: { id: started.started.run.id } })).claimedBy).toBe(
    "worker-b",
  );
});
