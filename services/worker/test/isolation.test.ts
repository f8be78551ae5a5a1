import { CRON_RUN_JOB, createCronJob, cronSchedulerId } from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleBurst } from "../../../test/support/events.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// Contract §9, Isolation, through the whole worker: organization B's 300 events go to receivers
// that accept the connection and never answer; its attempts time out, its origins are capped and
// the rest of its attempts hang or wait behind the caps; meanwhile organization A's first attempts
// and retries (events and cron runs) leave on time. The timeout and
// retry delays are shortened to keep the scenario short; the worker's concurrency and its origin
// caps keep their defaults.

/** Lateness goals: A's first attempts after their time, A's retries after theirs (p99, ms). */
const FIRST_ATTEMPT_GOAL_MS = 250;
const RETRY_GOAL_MS = 300;
/** B, the noisy neighbour: events spread over receivers that never answer. */
const NEIGHBOUR_EVENTS = 300;
const NEIGHBOUR_RECEIVERS = 10;
const RETRY_DELAY_MS = 1_000;
const TIMEOUT_MS = 2_000;

let context: TestContext;
let worker: DeliveryWorker;

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    DELIVERY_TIMEOUT_MS: String(TIMEOUT_MS),
    RETRY_DELAYS_MS: `${RETRY_DELAY_MS},${RETRY_DELAY_MS},${RETRY_DELAY_MS}`,
  });
  expect(context.config).toMatchObject({
    WORKER_CONCURRENCY: 50,
    ORIGIN_CONCURRENCY: 50,
    ORIGIN_UNHEALTHY_CONCURRENCY: 2,
  });
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
});

afterAll(async () => {
  await worker.stop();
  await context.close();
});

/** The 99th percentile (nearest rank) of `values`. */
function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(sorted.length * 0.99) - 1)] as number;
}

/**
 * A receiver that fails each delivery's first attempt (500) and accepts the retry (200); deliveries
 * are told apart by their `webhook-id` (an event's id, or a cron run's).
 */
function startFailingFirstReceiver(): Promise<Receiver> {
  const seen = new Map<string, number>();
  return startReceiver({
    status: (_n, req) => {
      const id = String(req.headers["webhook-id"]);
      const before = seen.get(id) ?? 0;
      seen.set(id, before + 1);
      return before === 0 ? 500 : 200;
    },
  });
}

interface Neighbour {
  org: TestOrganization;
  receivers: Receiver[];
  /** When B's events are due. */
  due: number;
  arrivals(): number;
  /** Closes B's receivers (its attempts then fail at once) and waits for every B event to end. */
  stop(): Promise<void>;
}

/**
 * Organization B: NEIGHBOUR_EVENTS events due at `due`, spread over NEIGHBOUR_RECEIVERS receivers
 * (distinct origins) that accept connections and never answer.
 */
async function startNeighbour(due: number): Promise<Neighbour> {
  const org = await createTestOrganization(context, "Noisy neighbour");
  const receivers = await Promise.all(
    Array.from({ length: NEIGHBOUR_RECEIVERS }, () => startReceiver({ hang: () => true })),
  );
  const { eventQueue } = createTestApiDeps(context).deps;
  await Promise.all(
    receivers.map((receiver) =>
      scheduleBurst(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: new Date(due),
        count: NEIGHBOUR_EVENTS / NEIGHBOUR_RECEIVERS,
      }),
    ),
  );
  const arrivals = () => receivers.reduce((sum, receiver) => sum + receiver.deliveries.length, 0);
  return {
    org,
    receivers,
    due,
    arrivals,
    async stop() {
      await Promise.all(receivers.map((receiver) => receiver.close()));
      await expect
        .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Failed To Send" } }), {
          timeout: 30_000,
          interval: 200,
        })
        .toBe(NEIGHBOUR_EVENTS);
    },
  };
}

/**
 * What B was going through at `at`: every one of its receivers had timed out an attempt (so each
 * origin was capped), attempts were hanging on them, and all of its events were still under way
 * (their attempts hanging, or waiting in the dispatcher behind the caps).
 */
async function expectNeighbourHanging(neighbour: Neighbour, at: number) {
  const arrivedBefore = neighbour.receivers.flatMap((receiver) =>
    receiver.deliveries.filter((delivery) => delivery.at < at),
  );
  // Still unanswered at `at`: they arrived less than the timeout before it.
  expect(arrivedBefore.filter((delivery) => delivery.at > at - TIMEOUT_MS).length).toBeGreaterThan(0);
  const timedOut = await context.db.eventAttempt.findMany({
    where: {
      event: { orgId: neighbour.org.orgId },
      at: { lte: new Date(at - TIMEOUT_MS) },
      error: `Timed out after ${TIMEOUT_MS} ms`,
    },
    select: { event: { select: { destination: true } } },
  });
  expect(new Set(timedOut.map((attempt) => attempt.event.destination)).size).toBe(NEIGHBOUR_RECEIVERS);
  const underWay = await context.db.event.count({
    where: { orgId: neighbour.org.orgId, status: { in: ["Pending", "Queued"] } },
  });
  expect(underWay).toBe(NEIGHBOUR_EVENTS);
}

it(`delivers A's events and their retries on time while B's ${NEIGHBOUR_EVENTS} events hang on ${NEIGHBOUR_RECEIVERS} receivers`, async () => {
  const org = await createTestOrganization(context, "Quiet tenant");
  const receiver = await startFailingFirstReceiver();
  // B is due in 4 s (time to create its events); A once B's first attempts have timed out (2 s
  // after they left, over about 1.5 s) and its first retries are hanging.
  const neighbour = await startNeighbour(Date.now() + 4_000);
  const due = neighbour.due + 4_500;
  const { eventQueue } = createTestApiDeps(context).deps;
  const events = await scheduleBurst(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: new Date(due),
    count: 100,
  });
  expect(Date.now()).toBeLessThan(neighbour.due);

  // Watched at the receiver (in memory) first: querying Postgres through the burst would take CPU
  // from the worker on this same event loop.
  await expect.poll(() => receiver.deliveries.length, { timeout: 30_000, interval: 100 }).toBe(2 * events.length);
  await expect
    .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), {
      timeout: 30_000,
      interval: 100,
    })
    .toBe(events.length);
  await expectNeighbourHanging(neighbour, due);

  const attempts = await context.db.eventAttempt.findMany({
    where: { event: { orgId: org.orgId } },
    orderBy: [{ eventId: "asc" }, { attempt: "asc" }],
  });
  expect(attempts).toHaveLength(2 * events.length);
  const firstLateness: number[] = [];
  const retryLateness: number[] = [];
  const retryRowLateness: number[] = [];
  for (const event of events) {
    const arrivals = receiver.deliveriesOf(event.id).map((delivery) => delivery.at);
    const [first, retry] = attempts.filter((attempt) => attempt.eventId === event.id);
    expect(arrivals).toHaveLength(2);
    expect([first?.responseStatus, retry?.responseStatus]).toEqual([500, 200]);
    firstLateness.push((arrivals[0] as number) - due);
    // The retry is due RETRY_DELAY_MS after the attempt before it.
    const retryDue = (first?.at.getTime() as number) + RETRY_DELAY_MS;
    retryLateness.push((arrivals[1] as number) - retryDue);
    retryRowLateness.push((retry?.at.getTime() as number) - retryDue);
  }
  const measured = {
    firstAttemptP99: p99(firstLateness),
    firstAttemptMax: Math.max(...firstLateness),
    retryP99: p99(retryLateness),
    retryMax: Math.max(...retryLateness),
    retryRowP99: p99(retryRowLateness),
    neighbourArrivals: neighbour.arrivals(),
    // When A's first attempts left the worker (their rows' time); the rest of the lateness is the
    // way to the receiver and its reading of the request, on this one event loop.
    firstDispatchP99: p99(
      attempts.filter((attempt) => attempt.attempt === 1).map((attempt) => attempt.at.getTime() - due),
    ),
  };
  console.log(`isolation, events (ms late): ${JSON.stringify(measured)}`);
  await neighbour.stop();
  await receiver.close();

  // Never early.
  expect(Math.min(...firstLateness)).toBeGreaterThanOrEqual(0);
  expect(Math.min(...retryRowLateness)).toBeGreaterThanOrEqual(0);
  expect(measured.firstAttemptP99).toBeLessThanOrEqual(FIRST_ATTEMPT_GOAL_MS);
  expect(measured.retryP99).toBeLessThanOrEqual(RETRY_GOAL_MS);
}, 90_000);

it("delivers A's cron runs and their retries on time while B's receivers hang", async () => {
  const org = await createTestOrganization(context, "Quiet tenant");
  const receiver = await startFailingFirstReceiver();
  const neighbour = await startNeighbour(Date.now() + 4_000);
  const first = neighbour.due + 4_500;
  // Three cron jobs (the default limit per organization), each firing ten times 100 ms apart. Their
  // expression never matches during the test: the firings are put on the cron queue directly, as
  // their job schedulers would at each matching time (same job name and id).
  const { cronQueue } = createTestApiDeps(context);
  const firings: { cronJobId: string; at: number }[] = [];
  for (let n = 0; n < 3; n++) {
    const job = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "0 0 1 1 *", timezone: "UTC", destination: receiver.url, payload: `{"n":${n}}` },
      new Date(),
      3,
    );
    for (let k = 0; k < 10; k++) firings.push({ cronJobId: job.id, at: first + k * 100 });
  }
  await cronQueue.addBulk(
    firings.map(({ cronJobId, at }) => ({
      name: CRON_RUN_JOB,
      data: { cronJobId },
      // The firing's time is read from its id, as for a scheduler's firing.
      opts: { jobId: `repeat:${cronSchedulerId(cronJobId)}:${at}`, delay: at - Date.now() },
    })),
  );
  expect(Date.now()).toBeLessThan(neighbour.due);

  await expect.poll(() => receiver.deliveries.length, { timeout: 30_000, interval: 100 }).toBe(2 * firings.length);
  await expect
    .poll(() => context.db.cronRun.count({ where: { orgId: org.orgId, status: "Sent" } }), {
      timeout: 30_000,
      interval: 100,
    })
    .toBe(firings.length);
  await expectNeighbourHanging(neighbour, first);

  const runs = await context.db.cronRun.findMany({ where: { orgId: org.orgId } });
  expect(runs).toHaveLength(firings.length);
  const firstLateness: number[] = [];
  const retryLateness: number[] = [];
  for (const run of runs) {
    expect(run).toMatchObject({ status: "Sent", attempts: 2, responseStatus: 200 });
    const arrivals = receiver.deliveriesOf(run.id).map((delivery) => delivery.at);
    expect(arrivals).toHaveLength(2);
    firstLateness.push((arrivals[0] as number) - run.scheduledFor.getTime());
    // A run keeps only its last attempt's time: the first one's is taken as its arrival.
    retryLateness.push((arrivals[1] as number) - ((arrivals[0] as number) + RETRY_DELAY_MS));
  }
  const measured = {
    firstAttemptP99: p99(firstLateness),
    firstAttemptMax: Math.max(...firstLateness),
    retryP99: p99(retryLateness),
    retryMax: Math.max(...retryLateness),
    neighbourArrivals: neighbour.arrivals(),
  };
  console.log(`isolation, cron runs (ms late): ${JSON.stringify(measured)}`);
  await neighbour.stop();
  await receiver.close();

  expect(Math.min(...firstLateness)).toBeGreaterThanOrEqual(0);
  expect(Math.min(...retryLateness)).toBeGreaterThanOrEqual(0);
  expect(measured.firstAttemptP99).toBeLessThanOrEqual(FIRST_ATTEMPT_GOAL_MS);
  expect(measured.retryP99).toBeLessThanOrEqual(RETRY_GOAL_MS);
}, 90_000);
