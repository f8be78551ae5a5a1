import { createAdmissionStore, createCronJob, cronSchedulerId, type EventRecord } from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  fireEverySecond,
  PER_SECOND_CRON_SETTINGS,
  reconcilerSettled,
  type TestContext,
} from "../../../test/support/context.ts";
import { arrivalsOf, scheduleInFlow, setFlow, setPaused } from "../../../test/support/flows.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// What a worker holds while flows hold deliveries back (contract §10.2, flow-gate.ts): at most
// FLOW_HELD_MAX in memory, the rest back in the queue and looked at again every FLOW_RECHECK_MS;
// handed back when the worker stops; cron runs held like events. A real worker in this process, the
// flows' rows written as the API writes them (test/support/flows.ts), receivers on loopback.

const FLOW_HELD_MAX = 5;
const FLOW_RECHECK_MS = 1_000;
/** A stop that hands held deliveries back takes well under this; one waiting on a held delivery would not end. */
const STOP_BOUND_MS = 5_000;

let context: TestContext;
let worker: DeliveryWorker;
const receivers: Receiver[] = [];

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    FLOW_HELD_MAX: String(FLOW_HELD_MAX),
    FLOW_RECHECK_MS: String(FLOW_RECHECK_MS),
    ...PER_SECOND_CRON_SETTINGS,
  });
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
  // Its first run over, the reconciler stays away from the per-second scheduler of the cron test.
  await reconcilerSettled(context);
});

afterAll(async () => {
  await worker?.stop();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await context.close();
});

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  receivers.push(started);
  return started;
}

/** A sample's value as the running worker's /metrics shows it. */
async function metric(sample: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${worker.healthPort}/metrics`)).text();
  const line = text.split("\n").find((each) => each.startsWith(`${sample} `));
  if (!line) throw new Error(`no ${sample} in the worker's metrics`);
  return Number(line.slice(sample.length + 1));
}

const HELD = "punctual_deliveries_held";
const HELD_PAUSED_TOTAL = 'punctual_deliveries_held_total{reason="paused"}';

/** The event jobs waiting in Redis (delayed or ready), not held by a worker. */
async function jobsInQueue(): Promise<number> {
  const counts = await createTestApiDeps(context).queue.getJobCounts("delayed", "wait", "prioritized");
  return (counts.delayed ?? 0) + (counts.wait ?? 0) + (counts.prioritized ?? 0);
}

async function statusesOf(events: EventRecord[]) {
  return context.db.event.findMany({
    where: { id: { in: events.map((event) => event.id) } },
    select: { status: true, claimedBy: true },
  });
}

/** Each event of `events` reached `to` exactly once, and all are Sent after one attempt each. */
async function expectDeliveredOnce(to: Receiver, events: EventRecord[]) {
  await expect.poll(() => arrivalsOf(to, events).length, { timeout: 15_000 }).toBe(events.length);
  const ids = events.map((event) => event.id);
  await expect.poll(() => context.db.event.count({ where: { id: { in: ids }, status: "Sent" } })).toBe(events.length);
  for (const event of events) expect(to.deliveriesOf(event.id)).toHaveLength(1);
  expect(to.deliveries).toHaveLength(events.length);
  expect(await context.db.eventAttempt.count({ where: { eventId: { in: ids } } })).toBe(events.length);
}

it(`a paused flow's 20 due deliveries: the worker holds at most ${FLOW_HELD_MAX} in memory and the rest wait in the queue; resumed, each of the 20 is delivered once`, async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  await setFlow(context, org.orgId, "deploying", { paused: true });
  const to = await receiver();
  const heldBefore = await metric(HELD_PAUSED_TOTAL);
  const events = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: to.url,
    scheduledTime: new Date(Date.now() + 1_500),
    flowKey: "deploying",
    count: 20,
  });

  // Sampled every 25 ms while paused: what the worker holds, and what waits in Redis.
  const samples: { held: number; queued: number }[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const [held, queued] = await Promise.all([metric(HELD), jobsInQueue()]);
      samples.push({ held, queued });
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  // Until those handed back have come back at least twice (FLOW_RECHECK_MS apart) and been held
  // again: 20 held at first, then 15 back each time.
  await expect
    .poll(async () => (await metric(HELD_PAUSED_TOTAL)) - heldBefore, { timeout: 15_000 })
    .toBeGreaterThanOrEqual(20 + 2 * 15);
  sampling = false;
  await sampler;

  expect(Math.max(...samples.map((sample) => sample.held))).toBe(FLOW_HELD_MAX);
  // While 5 are held, the other 15 wait in the queue.
  expect(samples.some((sample) => sample.held === FLOW_HELD_MAX && sample.queued === 20 - FLOW_HELD_MAX)).toBe(true);
  expect(to.deliveries).toHaveLength(0);
  // Waiting is not failing: no attempt, and each event Queued (claimed while held, or handed back).
  expect((await statusesOf(events)).every((event) => event.status === "Queued")).toBe(true);
  expect(await context.db.eventAttempt.count({ where: { eventId: { in: events.map((event) => event.id) } } })).toBe(0);

  await setPaused(context, org.orgId, "deploying", false);
  await expectDeliveredOnce(to, events);
  await expect.poll(() => metric(HELD)).toBe(0);
}, 60_000);

it("a cron run in a paused flow waits, reported waiting, and is delivered once after the resume", async () => {
  const org = await createTestOrganization(context);
  const store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
  await setFlow(context, org.orgId, "nightly", { paused: true });
  const to = await receiver();
  const job = await createCronJob(
    context.db,
    { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination: to.url, payload: "tick" },
    new Date(),
    10,
  );
  await context.db.$executeRaw`UPDATE cron_jobs SET flow_key = 'nightly' WHERE id = ${job.id}`;
  const queue = await fireEverySecond(context, job.id);
  await expect.poll(() => context.db.cronRun.count({ where: { cronJobId: job.id } })).toBeGreaterThanOrEqual(1);
  await queue.removeJobScheduler(cronSchedulerId(job.id));

  // Every run made is held by its flow, and reported waiting.
  await expect
    .poll(async () => {
      const [runs, counts] = await Promise.all([
        context.db.cronRun.count({ where: { cronJobId: job.id } }),
        store.flowCounts(org.orgId, "nightly"),
      ]);
      return counts.waiting === runs;
    })
    .toBe(true);
  const runs = await context.db.cronRun.findMany({ where: { cronJobId: job.id } });
  // The worker copied the job's flow into each run.
  expect(runs.map((run) => run.flowKey)).toEqual(runs.map(() => "nightly"));
  expect(runs.map((run) => [run.status, run.attempts])).toEqual(runs.map(() => ["Queued", 0]));
  expect(to.deliveries).toHaveLength(0);

  const resumedAt = Date.now();
  await setPaused(context, org.orgId, "nightly", false);
  await expect.poll(() => context.db.cronRun.count({ where: { cronJobId: job.id, status: "Sent" } })).toBe(runs.length);
  for (const run of runs) {
    const deliveries = to.deliveriesOf(run.id);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]?.at).toBeGreaterThanOrEqual(resumedAt);
  }
  expect(await context.db.cronRun.count({ where: { cronJobId: job.id } })).toBe(runs.length);
  await expect.poll(() => store.flowCounts(org.orgId, "nightly")).toMatchObject({ waiting: 0, inFlight: 0 });
}, 30_000);

it("a worker stopped while it holds a paused flow's deliveries hands them back without waiting for them; after the resume a new worker delivers each once", async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  await setFlow(context, org.orgId, "frozen", { paused: true });
  const to = await receiver();
  const events = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: to.url,
    scheduledTime: new Date(Date.now() + 1_000),
    flowKey: "frozen",
    count: 8,
  });
  await expect.poll(() => metric(HELD)).toBe(FLOW_HELD_MAX);

  const stopping = Date.now();
  await worker.stop();
  const stopMs = Date.now() - stopping;
  expect(stopMs).toBeLessThan(STOP_BOUND_MS);
  // Every one back in the queue, Queued and nobody's: none sent, none failed.
  await expect
    .poll(async () => (await statusesOf(events)).map((event) => [event.status, event.claimedBy]))
    .toEqual(events.map(() => ["Queued", null]));
  expect(await jobsInQueue()).toBe(events.length);
  expect(to.deliveries).toHaveLength(0);

  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
  await setPaused(context, org.orgId, "frozen", false);
  await expectDeliveredOnce(to, events);
}, 60_000);
