import { createAdmissionStore, type EventRecord } from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import {
  arrivalsOf,
  scheduleInFlow,
  setFlow,
  setPaused,
  startOpenCountingReceiver,
} from "../../../test/support/flows.ts";
import { type ServiceProcess, startWorkerProcess } from "../../../test/support/processes.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";

// Flows (contract §10.2) across two worker processes: each flow's limits hold over both, because
// they are decided in Redis (packages/core/src/flows/admission-store.ts), and a held flow delays
// nobody else. The flows' rows are written as the API writes them (test/support/flows.ts).

/**
 * How much later than its admission (decided in Redis) an attempt may start, as the worker records
 * it, or arrive at the receiver on loopback, on a loaded machine.
 */
const ARRIVAL_SLACK_MS = 50;

let context: TestContext;
const workers: ServiceProcess[] = [];
const receivers: Receiver[] = [];

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: "100000" });
  for (let n = 0; n < 2; n++) {
    const { worker } = await startWorkerProcess(context.config, { WORKER_WARMUP_REQUESTS: "300" });
    workers.push(worker);
  }
});

afterAll(async () => {
  for (const worker of workers) worker.child.kill("SIGTERM");
  await Promise.all(workers.map((worker) => new Promise((resolve) => worker.child.once("exit", resolve))));
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await context.close();
});

async function receiver(): Promise<Receiver> {
  const started = await startReceiver();
  receivers.push(started);
  return started;
}

/** Lateness of each delivery of `events` (arrival − due), sorted. */
function latenessOf(to: Receiver, events: EventRecord[], due: Date): number[] {
  return arrivalsOf(to, events).map((at) => at - due.getTime());
}

function p99(sorted: number[]): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] as number;
}

it("20 deliveries due at one instant in a flow of 5 per second arrive never more than 5 in a second, all within 5 s, while 20 outside it are on time", async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  await setFlow(context, org.orgId, "five-a-second", { rate: 5, periodMs: 1_000 });
  const limited = await receiver();
  const free = await receiver();
  const due = new Date(Date.now() + 4_000);
  const inFlow = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: limited.url,
    scheduledTime: due,
    flowKey: "five-a-second",
    count: 20,
  });
  const outside = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: free.url,
    scheduledTime: due,
    flowKey: null,
    count: 20,
  });

  await expect.poll(() => arrivalsOf(limited, inFlow).length, { timeout: 20_000 }).toBe(20);
  const arrivals = arrivalsOf(limited, inFlow);
  // The limit is on starts: any 6 consecutive starts, as the workers recorded them, span at least a
  // second (less the slack between the admission and the start): never 6 in a second.
  const ids = inFlow.map((event) => event.id);
  await expect.poll(() => context.db.eventAttempt.count({ where: { eventId: { in: ids } } })).toBe(20);
  const starts = (await context.db.eventAttempt.findMany({ where: { eventId: { in: ids } }, select: { at: true } }))
    .map((attempt) => attempt.at.getTime())
    .sort((a, b) => a - b);
  for (let n = 5; n < starts.length; n++) {
    expect((starts[n] as number) - (starts[n - 5] as number)).toBeGreaterThanOrEqual(1_000 - ARRIVAL_SLACK_MS);
  }
  // Four windows of five: the last starts 3 s after the first, and all are in within 5 s of their time.
  const last = (arrivals.at(-1) as number) - due.getTime();
  expect(last).toBeGreaterThanOrEqual(3_000 - ARRIVAL_SLACK_MS);
  expect(last).toBeLessThan(5_000);
  // Each delivered once, by one worker or the other.
  expect(limited.deliveries).toHaveLength(20);

  await expect.poll(() => arrivalsOf(free, outside).length).toBe(20);
  expect(p99(latenessOf(free, outside, due))).toBeLessThanOrEqual(250);
});

it("a flow of parallelism 2 with receivers answering after 1 s never has more than 2 in flight over both workers", async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  await setFlow(context, org.orgId, "two-at-once", { parallelism: 2 });
  const slow = await startOpenCountingReceiver(1_000);
  receivers.push(slow);
  const due = new Date(Date.now() + 3_000);
  const events = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: slow.url,
    scheduledTime: due,
    flowKey: "two-at-once",
    count: 6,
  });

  await expect.poll(() => arrivalsOf(slow, events).length, { timeout: 20_000 }).toBe(6);
  await expect.poll(() => slow.open()).toBe(0);
  expect(slow.maxOpen()).toBe(2);
  // Three rounds of two, each a second long.
  const arrivals = arrivalsOf(slow, events);
  expect((arrivals.at(-1) as number) - (arrivals[0] as number)).toBeGreaterThanOrEqual(2_000 - ARRIVAL_SLACK_MS);
  await expect
    .poll(() => context.db.event.count({ where: { id: { in: events.map((event) => event.id) }, status: "Sent" } }))
    .toBe(6);
});

it("a paused flow holds its 3 due deliveries and reports them waiting; resumed, they arrive within 1 s; another flow due then is on time", async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  const store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
  await setFlow(context, org.orgId, "deploying", { paused: true });
  await setFlow(context, org.orgId, "running", { rate: 100 });
  const held = await receiver();
  const other = await receiver();
  const due = new Date(Date.now() + 3_000);
  const paused = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: held.url,
    scheduledTime: due,
    flowKey: "deploying",
    count: 3,
  });
  const running = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: other.url,
    scheduledTime: due,
    flowKey: "running",
    count: 20,
  });

  await expect.poll(() => arrivalsOf(other, running).length).toBe(20);
  expect(p99(latenessOf(other, running, due))).toBeLessThanOrEqual(250);
  // Held, and reported: three waiting since their time, none in flight.
  await expect
    .poll(() => store.flowCounts(org.orgId, "deploying"))
    .toEqual({
      waiting: 3,
      oldestWaitingSince: due.getTime(),
      inFlight: 0,
    });
  expect(held.deliveries).toHaveLength(0);
  const statuses = await context.db.event.findMany({
    where: { id: { in: paused.map((event) => event.id) } },
    select: { status: true },
  });
  // Claimed and waiting: nothing failed, no attempt made.
  expect(statuses.map((event) => event.status)).toEqual(["Queued", "Queued", "Queued"]);
  expect(await context.db.eventAttempt.count({ where: { eventId: { in: paused.map((event) => event.id) } } })).toBe(0);

  const resumedAt = Date.now();
  await setPaused(context, org.orgId, "deploying", false);
  await expect.poll(() => arrivalsOf(held, paused).length).toBe(3);
  expect((arrivalsOf(held, paused).at(-1) as number) - resumedAt).toBeLessThan(1_000);
  await expect.poll(() => store.flowCounts(org.orgId, "deploying")).toMatchObject({ waiting: 0 });
  expect(held.deliveries).toHaveLength(3);
});
