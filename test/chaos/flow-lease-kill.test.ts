import { createAdmissionStore, type DeliveryPolicy, type EventRecord } from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LEASE_MARGIN_MS } from "../../services/worker/src/delivery/gate-lines.ts";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { arrivalsOf, scheduleInFlow, setFlow } from "../support/flows.ts";
import { type ServiceProcess, startWorkerProcess } from "../support/processes.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { exitSignal } from "./killed-worker.ts";

// Chaos: a worker process holding a flow's parallelism leases (gate-lines.ts, admission-store.ts) is
// killed (SIGKILL: it gives nothing back). Its two attempts hang at the receiver; their leases live
// in Redis until timeoutMs + LEASE_MARGIN_MS after their admission, and then come back by
// themselves: a second worker's deliveries of the flow, held by parallelism 2 until then, start
// at that expiry, not later and not sooner. The killed worker's own two deliveries are taken over
// once its heartbeat has expired (owners.ts), and every event ends Sent.
//
// The second worker is started before the kill (once the first holds the jobs of the first
// deliveries), so its start, seconds on a loaded machine, does not hide the lease's expiry.

/** The deliveries' own time limit: their leases last this plus LEASE_MARGIN_MS. */
const TIMEOUT_MS = 1_000;
const LEASE_MS = TIMEOUT_MS + LEASE_MARGIN_MS;
/** The job locks of the killed worker run out this soon, so the second worker finds its jobs early. */
const JOB_LOCK_MS = 2_000;
/**
 * How much later than its admission (decided in Redis) an attempt reaches the receiver on a loaded
 * machine, and how much later than a lease's expiry a held line is let through (it asks again at
 * the soonest lease's expiry: gate-lines.ts).
 */
const ARRIVAL_SLACK_MS = 250;
const RELEASE_SLACK_MS = 1_000;
const POLICY: DeliveryPolicy = { timeoutMs: TIMEOUT_MS, retry: { delaysMs: [500, 500, 500, 500, 500] } };

let context: TestContext;
let receiver: Receiver;
/** While true, requests are recorded and never answered (until the receiver closes). */
let hanging = true;
let open = 0;
let maxOpen = 0;
const workers: ServiceProcess[] = [];

beforeAll(async () => {
  context = await createTestContext();
  receiver = await startReceiver({
    hang: () => hanging,
    mount: (app) =>
      app.use((_req, res, next) => {
        open += 1;
        maxOpen = Math.max(maxOpen, open);
        res.on("close", () => {
          open -= 1;
        });
        next();
      }),
  });
});

afterAll(async () => {
  for (const worker of workers) await worker.stop("SIGKILL");
  await receiver?.close();
  await context?.close();
});

async function startWorker(): Promise<ServiceProcess> {
  const { worker } = await startWorkerProcess(context.config, {
    JOB_LOCK_MS: String(JOB_LOCK_MS),
    WORKER_WARMUP_REQUESTS: "0",
  });
  workers.push(worker);
  return worker;
}

async function sentCount(events: EventRecord[]): Promise<number> {
  return context.db.event.count({ where: { id: { in: events.map((event) => event.id) }, status: "Sent" } });
}

it(`a worker killed holding a flow's 2 leases: they come back by themselves ${LEASE_MS / 1000} s after their admission, when the second worker's held deliveries start; none lost`, async () => {
  const org = await createTestOrganization(context);
  const { eventQueue, queue } = (() => {
    const made = createTestApiDeps(context);
    return { eventQueue: made.deps.eventQueue, queue: made.queue };
  })();
  const store = createAdmissionStore(context.redis, context.config.QUEUE_PREFIX);
  await setFlow(context, org.orgId, "two-at-once", { parallelism: 2 });

  const first = await startWorker();
  const killed = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: new Date(Date.now() + 6_000),
    flowKey: "two-at-once",
    count: 2,
    policy: POLICY,
  });
  // The first worker holds both jobs (prepared ahead of their time) before the second starts.
  await expect.poll(async () => (await queue.getJobCounts("active")).active).toBe(2);
  const secondStarting = startWorker();

  // Both in flight, hanging: killed at once, well within their time limit (they give no lease back).
  await expect.poll(() => arrivalsOf(receiver, killed).length, { timeout: 20_000 }).toBe(2);
  first.child.kill("SIGKILL");
  const killedAt = Date.now();
  const admittedBy = arrivalsOf(receiver, killed)[0] as number;
  expect(await exitSignal(first)).toBe("SIGKILL");
  hanging = false;
  // Up early enough to hold the next deliveries, and to say so (HELD_PUBLISH_MS), before the leases expire.
  await secondStarting;
  expect(Date.now() - admittedBy).toBeLessThan(LEASE_MS - 3_000);

  // Four more in the flow, due now: the second worker holds them, the dead worker's leases in flight.
  const held = await scheduleInFlow(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: new Date(Date.now() + 300),
    flowKey: "two-at-once",
    count: 4,
    policy: POLICY,
  });
  await expect.poll(() => store.flowCounts(org.orgId, "two-at-once")).toMatchObject({ waiting: 4, inFlight: 2 });
  expect(arrivalsOf(receiver, held)).toEqual([]);

  // The leases expire LEASE_MS after their admission (at or before the first arrival): the held
  // deliveries start then.
  await expect.poll(() => arrivalsOf(receiver, held).length, { timeout: LEASE_MS + 5_000 }).toBe(4);
  const returnedAfterMs = (arrivalsOf(receiver, held)[0] as number) - admittedBy;
  expect(returnedAfterMs).toBeGreaterThanOrEqual(LEASE_MS - ARRIVAL_SLACK_MS);
  expect(returnedAfterMs).toBeLessThan(LEASE_MS + RELEASE_SLACK_MS);
  await expect.poll(() => sentCount(held)).toBe(4);
  for (const event of held) expect(receiver.deliveriesOf(event.id)).toHaveLength(1);

  // The killed worker's two are taken over once its heartbeat has expired, and sent: none lost.
  await expect.poll(() => sentCount(killed), { timeout: 60_000, interval: 200 }).toBe(2);
  for (const event of killed) {
    // Its hung request at the kill, then the one answered.
    expect(receiver.deliveriesOf(event.id)).toHaveLength(2);
    const attempts = await context.db.eventAttempt.findMany({ where: { eventId: event.id } });
    expect(attempts.map((attempt) => attempt.responseStatus)).toEqual([200]);
  }
  const takenOverAfterMs =
    Math.min(...killed.map((event) => receiver.deliveriesOf(event.id)[1]?.at as number)) - killedAt;
  console.log(
    `flow leases of a killed worker: back ${returnedAfterMs} ms after their admission (lease ${LEASE_MS} ms); its own deliveries taken over ${takenOverAfterMs} ms after the kill`,
  );
  await expect
    .poll(() => store.flowCounts(org.orgId, "two-at-once"))
    .toEqual({ waiting: 0, oldestWaitingSince: undefined, inFlight: 0 });
  // Never more than the flow's 2 at once at the receiver, over both workers.
  expect(maxOpen).toBe(2);
  await expect.poll(() => open).toBe(0);
}, 120_000);
