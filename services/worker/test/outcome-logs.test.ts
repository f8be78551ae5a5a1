import { CRON_RUN_JOB, createCronJob, createEvent, fixedClock, recordAttempts } from "@punctual/core";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent } from "../../../test/support/events.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createReconciler } from "../src/maintenance/reconciler.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// The worker's `info` lines for each final outcome of a delivery, read from a logger that writes
// to memory (pino at its default level, info).

type LogLine = Record<string, unknown> & { msg: string };

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;
const written: string[] = [];
const logger = pino({ level: "info" }, { write: (line: string) => void written.push(line) });
const lines = (): LogLine[] => written.map((line) => JSON.parse(line) as LogLine);

/** The lines with this message and these fields. */
function linesOf(msg: string, fields: Record<string, unknown>): LogLine[] {
  return lines().filter((line) => line.msg === msg && Object.entries(fields).every(([k, v]) => line[k] === v));
}

beforeAll(async () => {
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", RETRY_DELAYS_MS: "100,100" });
  org = await createTestOrganization(context);
  receiver = await startReceiver({ status: (_n, req) => (req.path === "/fail" ? 500 : 200) });
  worker = createWorker({ ...createTestApiDeps(context).deps, logger });
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await receiver.close();
  await context.close();
});

const failingUrl = () => receiver.url.replace("/hook", "/fail");

/** Milliseconds from `due` to the event's first recorded attempt. */
async function firstAttemptLateness(eventId: string, due: Date): Promise<number> {
  const first = await context.db.eventAttempt.findFirstOrThrow({ where: { eventId, attempt: 1 } });
  return first.at.getTime() - due.getTime();
}

describe("outcome log lines", () => {
  it("writes the settings by their configuration names when the worker starts", () => {
    const [started, ...more] = lines().filter((line) => line.msg.startsWith("worker started"));
    expect(more).toHaveLength(0);
    expect(started).toMatchObject({
      level: 30,
      WORKER_CONCURRENCY: 50,
      WORKER_PREPARED_JOBS: 20_000,
      ORIGIN_CONCURRENCY: 50,
      PREPARE_AHEAD_MS: 30_000,
      CLAIM_LEAD_MS: 1_000,
    });
    expect(started).not.toHaveProperty("concurrency");
  });

  it("writes one `event sent` line with the ids, attempts, first attempt's lateness and answer", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const scheduledTime = new Date(Date.now() + 300);
    const payload = JSON.stringify({ secretOrder: "payload-must-not-be-logged" });
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime,
      payload,
    });
    await expect.poll(() => linesOf("event sent", { eventId: event.id }).length, { timeout: 10_000 }).toBe(1);
    const [line] = linesOf("event sent", { eventId: event.id });
    expect(line).toMatchObject({
      level: 30,
      eventId: event.id,
      orgId: org.orgId,
      attempts: 1,
      responseStatus: 200,
      error: null,
    });
    // First attempt's start − scheduled time, as recorded (the history keeps milliseconds).
    expect(line?.firstAttemptLatenessMs).toEqual(expect.any(Number));
    expect(line?.firstAttemptLatenessMs).toBeGreaterThanOrEqual(0);
    expect(
      Math.abs(Number(line?.firstAttemptLatenessMs) - (await firstAttemptLateness(event.id, scheduledTime))),
    ).toBeLessThanOrEqual(1);
    // Neither the payload nor the signing secret appears in any line.
    expect(written.join("")).not.toContain("payload-must-not-be-logged");
    expect(written.join("")).not.toContain(org.signingSecret);
  });

  it("writes one `event failed to send` line after the last attempt, with its answer", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const scheduledTime = new Date(Date.now() + 300);
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: failingUrl(),
      scheduledTime,
    });
    await expect.poll(() => linesOf("event failed to send", { eventId: event.id }).length, { timeout: 10_000 }).toBe(1);
    const [line] = linesOf("event failed to send", { eventId: event.id });
    expect(line).toMatchObject({
      level: 30,
      orgId: org.orgId,
      attempts: 3,
      responseStatus: 500,
      error: "Receiver answered 500",
    });
    // The first attempt's lateness, not the last one's (which came two retries later).
    expect(line?.firstAttemptLatenessMs).toEqual(expect.any(Number));
    expect(
      Math.abs(Number(line?.firstAttemptLatenessMs) - (await firstAttemptLateness(event.id, scheduledTime))),
    ).toBeLessThanOrEqual(1);
    expect(linesOf("event sent", { eventId: event.id })).toHaveLength(0);
  });

  it("takes a resumed event's first-attempt lateness from its history", async () => {
    const { eventQueue } = createTestApiDeps(context).deps;
    const scheduledTime = new Date(Date.now() + 200);
    // Not queued, and far enough ahead that the worker's own reconciler leaves it alone meanwhile.
    const { event } = await createEvent(
      context.db,
      { orgId: org.orgId, payload: "p", destination: receiver.url, scheduledTime: new Date(Date.now() + 3_600_000) },
      new Date(),
      1000,
    );
    // As if another worker had claimed it, made attempt 1 250 ms late, and died.
    await context.db.event.update({ where: { id: event.id }, data: { status: "Queued", scheduledTime } });
    const firstAt = new Date(scheduledTime.getTime() + 250);
    await recordAttempts(context.db, [
      {
        eventId: event.id,
        at: firstAt,
        responseStatus: 503,
        durationMs: 5,
        error: "Receiver answered 503",
        succeeded: false,
        maxAttempts: 3,
        last: false,
      },
    ]);
    await eventQueue.schedule({ ...event, scheduledTime });
    await expect.poll(() => linesOf("event sent", { eventId: event.id }).length, { timeout: 10_000 }).toBe(1);
    expect(linesOf("event sent", { eventId: event.id })[0]).toMatchObject({
      attempts: 2,
      firstAttemptLatenessMs: 250,
      responseStatus: 200,
    });
  });

  it("writes one `event failed to queue` line when the reconciler gives up on an event", async () => {
    // Far enough ahead that the worker's own reconciler leaves it alone.
    const scheduledTime = new Date(Date.now() + 600_000);
    const { event } = await createEvent(
      context.db,
      { orgId: org.orgId, payload: "p", destination: receiver.url, scheduledTime },
      new Date(),
      1000,
    );
    const { deps, queue, cronQueue } = createTestApiDeps(context);
    const reconcile = createReconciler({
      db: context.db,
      clock: fixedClock(new Date(scheduledTime.getTime() + context.config.QUEUE_GRACE_MS + 1_000)),
      config: context.config,
      eventQueues: queue,
      cronQueue,
      eventQueue: deps.eventQueue,
      cronJobSchedulers: deps.cronJobSchedulers,
      logger,
      redis: context.redis,
    });
    await reconcile();
    const failed = linesOf("event failed to queue", { eventId: event.id });
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({
      level: 30,
      orgId: org.orgId,
      attempts: 0,
      firstAttemptLatenessMs: null,
      responseStatus: null,
    });
    expect(failed[0]?.error).toContain("QUEUE_GRACE_MS");
  });
});

describe("cron run outcome log lines", () => {
  /** One firing of a new cron job, due now, as a job of its own (as the reconciler re-drives one). */
  async function fireOnce(destination: string) {
    const job = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "0 0 1 1 *", timezone: "UTC", destination, payload: '{"tick":1}' },
      new Date(),
      10,
    );
    const scheduledFor = new Date();
    await createTestApiDeps(context).cronQueue.add(CRON_RUN_JOB, {
      cronJobId: job.id,
      scheduledFor: scheduledFor.getTime(),
    });
    return { cronJobId: job.id, scheduledFor };
  }

  it("writes one `cron run sent` line with the job and run ids, attempts, lateness and answer", async () => {
    const { cronJobId, scheduledFor } = await fireOnce(receiver.url);
    await expect.poll(() => linesOf("cron run sent", { cronJobId }).length, { timeout: 10_000 }).toBe(1);
    const run = await context.db.cronRun.findFirstOrThrow({ where: { cronJobId } });
    const [line] = linesOf("cron run sent", { cronJobId });
    expect(line).toMatchObject({
      level: 30,
      runId: run.id,
      orgId: org.orgId,
      attempts: 1,
      responseStatus: 200,
      error: null,
    });
    const arrived = receiver.deliveriesOf(run.id)[0]?.at ?? Number.NaN;
    // The attempt started before the receiver saw it, and after the firing was due.
    expect(line?.firstAttemptLatenessMs).toEqual(expect.any(Number));
    expect(line?.firstAttemptLatenessMs).toBeGreaterThanOrEqual(0);
    expect(line?.firstAttemptLatenessMs).toBeLessThanOrEqual(arrived - scheduledFor.getTime());
  });

  it("writes one `cron run failed to send` line after the last attempt, with the first attempt's lateness", async () => {
    const { cronJobId, scheduledFor } = await fireOnce(failingUrl());
    await expect.poll(() => linesOf("cron run failed to send", { cronJobId }).length, { timeout: 10_000 }).toBe(1);
    const run = await context.db.cronRun.findFirstOrThrow({ where: { cronJobId } });
    expect(run.status).toBe("Failed To Send");
    const [line] = linesOf("cron run failed to send", { cronJobId });
    expect(line).toMatchObject({
      level: 30,
      runId: run.id,
      orgId: org.orgId,
      attempts: 3,
      responseStatus: 500,
      error: "Receiver answered 500",
    });
    // Kept across the retries (each one a new pass of the job): the first attempt's, not the last's.
    const [first, , last] = receiver.deliveriesOf(run.id);
    expect(last).toBeDefined();
    const lateness = line?.firstAttemptLatenessMs;
    expect(lateness).toEqual(expect.any(Number));
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThanOrEqual((first?.at ?? Number.NaN) - scheduledFor.getTime());
  });
});
