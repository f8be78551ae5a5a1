import { createAdmissionStore, type DeliveryPolicy, type EventRecord } from "@punctual/core";
import { pino } from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleInFlow } from "../../../test/support/flows.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { originOf } from "../src/delivery/transport.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// Destination health (contract §10.3) end to end: a real worker in this process, receivers on
// loopback answering 503 (or 200, or 404, as each test switches them), and the breaker's state read
// from Redis as the API reads it (createAdmissionStore(...).destinations). The settings are small so
// that a breaker opens within seconds: 5 failures in a row spanning at least 1 s, a probe every 500 ms.

const BREAKER_FAILURES = 5;
const BREAKER_MIN_SPAN_MS = 1_000;
const BREAKER_PROBE_MS = 500;
/**
 * How much later than the breaker's decision (in Redis) an attempt may reach the receiver on a
 * loaded machine: two probes' arrivals may be this much closer than BREAKER_PROBE_MS.
 */
const SLACK_MS = 100;
/** Retries every 300 ms, 20 of them: far more than a delivery makes while the tests watch it. */
const RETRYING: DeliveryPolicy = { retry: { delaysMs: Array.from({ length: 20 }, () => 300) } };

type LogLine = Record<string, unknown> & { msg: string };

let context: TestContext;
let worker: DeliveryWorker;
const receivers: Receiver[] = [];
const written: string[] = [];
const logger = pino({ level: "info" }, { write: (line: string) => void written.push(line) });
const store = () => createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    BREAKER_FAILURES: String(BREAKER_FAILURES),
    BREAKER_MIN_SPAN_MS: String(BREAKER_MIN_SPAN_MS),
    BREAKER_PROBE_MS: String(BREAKER_PROBE_MS),
  });
  worker = createWorker({ ...createTestApiDeps(context).deps, logger });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await context.close();
});

/** A receiver answering what `status` says at the time of each request. */
async function receiver(status: () => number): Promise<Receiver> {
  const started = await startReceiver({ status: () => status() });
  receivers.push(started);
  return started;
}

/** The worker's lines with this message's beginning, for this organization and origin. */
function linesOf(start: string, orgId: string, origin: string): LogLine[] {
  return written
    .map((line) => JSON.parse(line) as LogLine)
    .filter((line) => line.msg.startsWith(start) && line.orgId === orgId && line.origin === origin);
}

/** The worker's count of deliveries held back by an Unhealthy origin. */
const UNHEALTHY_HOLDS = 'punctual_deliveries_held_total{reason="unhealthy"}';

/** A sample's value as the worker's /metrics shows it. */
async function metric(sample: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${worker.healthPort}/metrics`)).text();
  const line = text.split("\n").find((each) => each.startsWith(`${sample} `));
  if (!line) throw new Error(`no ${sample} in the worker's metrics`);
  return Number(line.slice(sample.length + 1));
}

/** The origin's health as GET /api/destinations reads it. */
async function healthOf(orgId: string, origin: string) {
  return (await store().destinations(orgId)).find((destination) => destination.origin === origin);
}

/** `count` events of `org` to `to`, due in 1 s, with `policy`. */
function schedule(org: TestOrganization, to: Receiver, count: number, policy: DeliveryPolicy = RETRYING) {
  return scheduleInFlow(context, createTestApiDeps(context).deps.eventQueue, {
    orgId: org.orgId,
    destination: to.url,
    scheduledTime: new Date(Date.now() + 1_000),
    flowKey: null,
    count,
    policy,
  });
}

/** Statuses of `events`, in their order. */
async function statusesOf(events: EventRecord[]): Promise<string[]> {
  const rows = await context.db.event.findMany({
    where: { id: { in: events.map((event) => event.id) } },
    select: { id: true, status: true },
  });
  const byId = new Map(rows.map((row) => [row.id, row.status]));
  return events.map((event) => byId.get(event.id) ?? "missing");
}

/** Arrivals (ms since the epoch) at `to` after `from`, in order. */
const arrivalsAfter = (to: Receiver, from: number) =>
  to.deliveries.map((delivery) => delivery.at).filter((at) => at > from);

/** Waits until the origin is Unhealthy, and answers when it became so (ms since the epoch, Redis' clock). */
async function unhealthySince(orgId: string, origin: string): Promise<number> {
  await expect.poll(async () => (await healthOf(orgId, origin))?.state, { timeout: 20_000 }).toBe("Unhealthy");
  return (await healthOf(orgId, origin))?.since as number;
}

it("5 failures in a row over 1 s make the origin Unhealthy: only probes reach it, one per 500 ms, its deliveries are reported waiting, and a 200 to the next probe makes it Healthy and sends them all; each change is logged once", async () => {
  const org = await createTestOrganization(context);
  let status = 503;
  const to = await receiver(() => status);
  const origin = originOf(to.url);
  const events = await schedule(org, to, 6);

  const since = await unhealthySince(org.orgId, origin);
  // It took at least 5 failures spanning at least 1 s.
  const failedBefore = to.deliveries.filter((delivery) => delivery.at <= since);
  expect(failedBefore.length).toBeGreaterThanOrEqual(BREAKER_FAILURES);
  expect(since - (failedBefore[0]?.at as number)).toBeGreaterThanOrEqual(BREAKER_MIN_SPAN_MS);

  // Its deliveries wait, and are reported waiting.
  await expect.poll(async () => (await healthOf(org.orgId, origin))?.waiting).toBeGreaterThanOrEqual(4);
  // Watched over at least three probes, from SLACK_MS after the change (an attempt already on its
  // way then is no probe): only one reaches the receiver every BREAKER_PROBE_MS.
  const watchFrom = since + SLACK_MS;
  await expect.poll(() => arrivalsAfter(to, watchFrom).length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
  const healedAt = Date.now();
  status = 200;
  const probes = arrivalsAfter(to, watchFrom).filter((at) => at <= healedAt);
  expect(probes.length).toBeLessThanOrEqual(Math.floor((healedAt - watchFrom) / BREAKER_PROBE_MS) + 1);
  // The first probe comes a probe's interval after the change, the others as far apart.
  expect((probes[0] as number) - since).toBeGreaterThanOrEqual(BREAKER_PROBE_MS - SLACK_MS);
  for (let n = 1; n < probes.length; n++) {
    expect((probes[n] as number) - (probes[n - 1] as number)).toBeGreaterThanOrEqual(BREAKER_PROBE_MS - SLACK_MS);
  }
  expect(await healthOf(org.orgId, origin)).toMatchObject({ state: "Unhealthy" });

  // The next probe answered 200: Healthy, and every waiting delivery goes.
  await expect.poll(() => statusesOf(events), { timeout: 10_000 }).toEqual(events.map(() => "Sent"));
  expect(await healthOf(org.orgId, origin)).toMatchObject({ state: "Healthy", consecutiveFailures: 0 });
  const attempts = await context.db.eventAttempt.findMany({
    where: { eventId: { in: events.map((event) => event.id) } },
  });
  // Each answered 200 once; none was ended by its wait (no attempt "Not sent").
  for (const event of events) {
    expect(attempts.filter((a) => a.eventId === event.id && a.responseStatus === 200)).toHaveLength(1);
  }
  expect(attempts.filter((attempt) => attempt.error?.startsWith("Not sent"))).toEqual([]);
  // Once Healthy again, the waiting deliveries left together, not a probe's interval apart: within
  // 1 s of the healing probe (one may have been waiting for its retry, 300 ms).
  const answered = to.deliveries.filter((delivery) => delivery.at > healedAt).map((delivery) => delivery.at);
  expect(answered).toHaveLength(events.length);
  // The first of them was the next probe: a probe's interval after the last one.
  expect((answered[0] as number) - (probes.at(-1) as number)).toBeGreaterThanOrEqual(BREAKER_PROBE_MS - SLACK_MS);
  expect((answered.at(-1) as number) - (answered[0] as number)).toBeLessThan(1_000);

  // Each change logged exactly once.
  await expect.poll(() => linesOf("destination is Healthy again", org.orgId, origin).length).toBe(1);
  expect(linesOf("destination is Unhealthy", org.orgId, origin)).toHaveLength(1);
  expect(linesOf("destination is Unhealthy", org.orgId, origin)[0]).toMatchObject({
    msg: "destination is Unhealthy: its deliveries wait, one probe at a time",
    state: "Unhealthy",
    consecutiveFailures: expect.any(Number),
  });
  expect(linesOf("destination is Healthy again", org.orgId, origin)[0]).toMatchObject({
    msg: "destination is Healthy again: its waiting deliveries go, oldest first",
    state: "Healthy",
  });
}, 60_000);

it("a 4xx answer counts as alive: 11 failures over more than 1 s, never 5 in a row between 404s, leave the origin Healthy and none of its attempts held back", async () => {
  const org = await createTestOrganization(context);
  // 503, 503, 503, 503, 404, and again: at most 4 failures in a row.
  const to = await startReceiver({ status: (n) => (n % 5 === 4 ? 404 : 503) });
  receivers.push(to);
  const origin = originOf(to.url);
  const heldBefore = await metric(UNHEALTHY_HOLDS);
  const [event] = await schedule(org, to, 1, { retry: { delaysMs: Array.from({ length: 12 }, () => 300) } });
  if (!event) throw new Error("no event");

  await expect.poll(() => statusesOf([event]), { timeout: 15_000 }).toEqual(["Failed To Send"]);
  // All 13 attempts made, none of them held back by the breaker.
  expect(to.deliveriesOf(event.id)).toHaveLength(13);
  expect(await metric(UNHEALTHY_HOLDS)).toBe(heldBefore);
  const failures = (
    await context.db.eventAttempt.findMany({ where: { eventId: event.id }, orderBy: { attempt: "asc" } })
  )
    .filter((attempt) => attempt.responseStatus === 503)
    .map((attempt) => attempt.at.getTime());
  expect(failures).toHaveLength(11);
  expect((failures.at(-1) as number) - (failures[0] as number)).toBeGreaterThanOrEqual(BREAKER_MIN_SPAN_MS);
  // The 404 of attempt 10 reset the count: attempts 11 to 13 failed, 3 in a row.
  await expect
    .poll(() => healthOf(org.orgId, origin))
    .toMatchObject({ state: "Healthy", consecutiveFailures: 3, waiting: 0 });
  expect(linesOf("destination is Unhealthy", org.orgId, origin)).toEqual([]);
}, 30_000);

it("a reset makes an Unhealthy origin Healthy at once, and its waiting deliveries go then, not one probe at a time", async () => {
  const org = await createTestOrganization(context);
  let status = 503;
  const to = await receiver(() => status);
  const origin = originOf(to.url);
  const events = await schedule(org, to, 6);

  await unhealthySince(org.orgId, origin);
  await expect.poll(async () => (await healthOf(org.orgId, origin))?.waiting).toBeGreaterThanOrEqual(5);
  const waiting = (await healthOf(org.orgId, origin))?.waiting as number;

  // Still answering 503: only the reset can let them go.
  const resetAt = Date.now();
  expect(await store().reset(org.orgId, origin)).toBe(true);
  expect(await healthOf(org.orgId, origin)).toMatchObject({ state: "Healthy", consecutiveFailures: 0 });
  await expect.poll(() => arrivalsAfter(to, resetAt).length).toBeGreaterThanOrEqual(waiting);
  // More of them than probes could have let through in that time (one per BREAKER_PROBE_MS): a
  // held line asks again at the next probe's time at the latest, and is let through whole.
  const went = arrivalsAfter(to, resetAt).slice(0, waiting);
  const windowMs = (went.at(-1) as number) - resetAt;
  expect(waiting).toBeGreaterThan(Math.floor(windowMs / BREAKER_PROBE_MS) + 1);

  // Answering again, all end Sent.
  status = 200;
  await expect.poll(() => statusesOf(events), { timeout: 15_000 }).toEqual(events.map(() => "Sent"));
}, 60_000);

it("a delivery whose maxAgeMs passes while its origin is Unhealthy ends Failed To Send without a request, its attempt saying why", async () => {
  const org = await createTestOrganization(context);
  let status = 503;
  const to = await receiver(() => status);
  const origin = originOf(to.url);
  // Eight older deliveries wait before it: the probes, oldest first, go to them.
  const older = await schedule(org, to, 8);
  await unhealthySince(org.orgId, origin);
  await expect.poll(async () => (await healthOf(org.orgId, origin))?.waiting).toBeGreaterThanOrEqual(6);

  const due = new Date(Date.now() + 500);
  const [event] = await scheduleInFlow(context, createTestApiDeps(context).deps.eventQueue, {
    orgId: org.orgId,
    destination: to.url,
    scheduledTime: due,
    flowKey: null,
    policy: { retry: { delaysMs: [300], maxAgeMs: 1_500 } },
  });
  if (!event) throw new Error("no event");

  await expect.poll(() => statusesOf([event]), { timeout: 10_000 }).toEqual(["Failed To Send"]);
  const attempts = await context.db.eventAttempt.findMany({ where: { eventId: event.id } });
  expect(attempts).toHaveLength(1);
  expect(attempts[0]?.error).toBe("Not sent: its destination was Unhealthy until its maxAgeMs had passed");
  expect(attempts[0]?.responseStatus).toBeNull();
  // Ended at its deadline, not before.
  expect(attempts[0]?.at.getTime()).toBeGreaterThanOrEqual(due.getTime() + 1_500);
  expect(to.deliveriesOf(event.id)).toEqual([]);

  status = 200;
  await expect.poll(() => statusesOf(older), { timeout: 15_000 }).toEqual(older.map(() => "Sent"));
  expect(to.deliveriesOf(event.id)).toEqual([]);
}, 60_000);
