import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createBurstTogether } from "../support/bulk-events.ts";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { runBlock, shellBlocks, subsection } from "../support/doc-blocks.ts";
import { exitOf, repositoryRoot, type ServiceProcess, startWorkerProcess } from "../support/processes.ts";
import { sample } from "../support/prometheus.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

// The rolling upgrade of docs/upgrading.md, for the workers: a worker of the new version is started
// beside the running one, and once it answers /healthz the old one gets SIGTERM, here in the middle
// of a burst of 5,000 events due at one instant that the old worker alone holds. The old worker
// claimed the whole burst CLAIM_LEAD_MS before the instant, so it finishes sending it, and it hands
// its waiting retries back at once; the new one delivers those. A tenth of the events fail their
// first attempt (500), so retries are waiting when the signal comes.
//
// The guide's plain-host blocks run as written: the migration, then the replacement (the new
// worker's health, the old one's SIGTERM, the wait for its exit). Its first block, the install and
// build, is what CI runs before the tests (.ci/run); the processes here run from the sources, as
// every test's do.
//
// Delivery settings are the defaults, with two exceptions. SHUTDOWN_TIMEOUT_MS: a stopping worker
// sends every event it has claimed, and the rest of this burst took the old worker 6 to 34 s on a
// loaded 2-core machine, beyond the default 15 s; a worker that runs out of it exits 1, and the
// requests it had on the wire are sent again (docs/upgrading.md has that run's numbers). The guide
// asks for a SHUTDOWN_TIMEOUT_MS that covers the largest burst a worker holds; this one covers the
// slowest machine the suite runs on. WORKER_WARMUP_REQUESTS=0: the warm-up is for lateness, which
// this test does not judge, and its 3,000 requests took 12 s per worker start on a loaded machine.

const BURST = 5_000;
/** Requests arrived at the receiver after which the old worker is replaced: the burst is under way. */
const SIGNAL_AFTER = 1_000;
/** Each answer takes this long, so that the burst (50 requests at a time) lasts a while. */
const ANSWER_MS = 20;
/**
 * The burst is due this long after its creation began: the old worker takes every job meanwhile, and
 * the new one starts (up to 15 s on a loaded machine).
 */
const DUE_IN_MS = 20_000;
const WORKER_SETTINGS = { SHUTDOWN_TIMEOUT_MS: "120000", WORKER_WARMUP_REQUESTS: "0" };

const guide = await readFile(join(repositoryRoot, "docs/upgrading.md"), "utf8");
const plainHostBlocks = shellBlocks(subsection(guide, "Rolling upgrade", "On a plain host"));

let context: TestContext;
let receiver: Receiver;
/** Events whose first attempt the receiver answers with 500. */
const failFirst = new Set<string>();
/** Requests answered 2xx, per webhook-id: deliveries the receiver accepted. */
const accepted = new Map<string, number>();

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: "100000" });
  receiver = await startReceiver({
    delayMs: ANSWER_MS,
    status: (_n, req) => {
      const id = String(req.headers["webhook-id"]);
      if (failFirst.has(id) && receiver.deliveriesOf(id).length === 1) return 500;
      accepted.set(id, (accepted.get(id) ?? 0) + 1);
      return 200;
    },
  });
});

afterAll(async () => {
  await receiver?.close();
  await context?.close();
});

it(`a new worker started and the old one SIGTERMed in the middle of a burst of ${BURST}: none lost, none delivered twice`, async () => {
  // The guide's blocks, each recognised by its command: a block added to the guide fails here until
  // the test runs it.
  const roles = ["pnpm install --frozen-lockfile", "pnpm db:migrate", "kill -TERM"];
  expect(plainHostBlocks).toHaveLength(roles.length);
  for (const [n, role] of roles.entries()) expect(plainHostBlocks[n], `block ${n + 1}`).toContain(role);
  const [, migrate, replace] = plainHostBlocks as string[];
  const vars = { DATABASE_URL: context.config.DATABASE_URL, PUNCTUAL_ENV_FILE: "none" };

  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  const { queue } = createTestApiDeps(context);
  // The old worker, and rolling step 1 while it runs: the migrations (none are pending: the schema is
  // this version's). The old worker writes its info lines: its "shutting down" line dates the signal.
  const [old, migrated] = await Promise.all([
    startWorkerProcess(context.config, { ...WORKER_SETTINGS, LOG_LEVEL: "info" }),
    runBlock(migrate as string, repositoryRoot, vars),
  ]);
  let oldExitedAt = 0;
  const oldExited = exitOf(old.worker).then((code) => {
    oldExitedAt = Date.now();
    return code;
  });
  let next: { worker: ServiceProcess; port: number } | undefined;
  try {
    expect(migrated.code, migrated.output).toBe(0);
    expect(migrated.output).toContain("No pending migrations to apply");
    const createdFrom = Date.now();
    const due = new Date(createdFrom + DUE_IN_MS);
    const events = await createBurstTogether(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: due,
      count: BURST,
    });
    const createMs = Date.now() - createdFrom;
    events.forEach((event, n) => {
      if (n % 10 === 0) failFirst.add(event.id);
    });
    // The old worker holds every job of the burst (PREPARE_AHEAD_MS covers the wait) before the
    // new one exists.
    await expect.poll(() => queue.getJobCountByTypes("active"), { timeout: 60_000, interval: 200 }).toBe(BURST);

    // Rolling step 3: the new worker, up and answering /healthz.
    next = await startWorkerProcess(context.config, { ...WORKER_SETTINGS, LOG_LEVEL: "warn" });
    const newUpBeforeInstantMs = due.getTime() - Date.now();
    // Then the guide's replacement, once the burst is under way: the new worker answers, the old one
    // gets SIGTERM, and the block ends when it has exited.
    await expect.poll(() => receiver.deliveries.length, { timeout: 60_000 }).toBeGreaterThanOrEqual(SIGNAL_AFTER);
    const arrivedAtBlock = receiver.deliveries.length;
    const replaced = await runBlock(replace as string, repositoryRoot, {
      NEW_HEALTH_URL: `http://127.0.0.1:${next.port}/healthz`,
      OLD_PID: String(old.worker.child.pid),
    });
    expect(replaced.code, replaced.output).toBe(0);
    const oldCode = await oldExited;
    const signalledAt = shutdownLoggedAt(old.worker.output());

    const ids = events.map((event) => event.id);
    await expect
      .poll(() => context.db.event.count({ where: { id: { in: ids }, status: "Sent" } }), {
        timeout: 120_000,
        interval: 250,
      })
      .toBe(BURST);
    // Once every event is Sent and its attempts recorded, nothing is on its way to the receiver.
    const attempts = await context.db.eventAttempt.count({ where: { eventId: { in: ids } } });
    const metrics = await (await fetch(`http://127.0.0.1:${next.port}/metrics`)).text();
    const sentByNew = sample(metrics, "punctual_deliveries_total", { kind: "event", outcome: "sent" }) ?? 0;
    const takenOver = sample(metrics, "punctual_delivery_owner_decisions_total", {
      kind: "event",
      decision: "taken_over",
    });
    const neverAccepted = ids.filter((id) => (accepted.get(id) ?? 0) === 0).length;
    const acceptedTwice = ids.filter((id) => (accepted.get(id) ?? 0) > 1).length;
    // Each event's first arrival, before and after the old worker took the signal.
    const firstArrivals = ids.map((id) => Math.min(...receiver.deliveriesOf(id).map((delivery) => delivery.at)));
    const firstBeforeSignal = firstArrivals.filter((at) => at < signalledAt).length;
    const lastFirst = Math.max(...firstArrivals);
    const afterInstant = (at: number) => at - due.getTime();
    console.info(
      `[rolling] burst of ${BURST} created in ${createMs} ms; new worker up ${newUpBeforeInstantMs} ms before the instant; ` +
        `old worker SIGTERMed ${afterInstant(signalledAt)} ms after the instant (${arrivedAtBlock} requests had arrived, ${firstBeforeSignal} first attempts), ` +
        `exited ${oldCode} ${oldExitedAt - signalledAt} ms later; last first attempt +${afterInstant(lastFirst)} ms; ` +
        `new worker sent ${sentByNew} (took over ${takenOver ?? 0}); ${failFirst.size} failed first; ` +
        `${receiver.deliveries.length} requests, ${attempts} attempts; lost ${neverAccepted}, delivered twice ${acceptedTwice}`,
    );

    expect(oldCode, old.worker.output().slice(-5_000)).toBe(0);
    // The signal fell in the middle of the burst: first attempts arrived before it and after it.
    expect(firstBeforeSignal).toBeGreaterThanOrEqual(SIGNAL_AFTER - failFirst.size);
    expect(firstBeforeSignal).toBeLessThan(BURST);
    expect({ lost: neverAccepted, deliveredTwice: acceptedTwice }).toEqual({ lost: 0, deliveredTwice: 0 });
    // Every request was one recorded attempt: a first attempt per event, a retry per failed one.
    expect(receiver.deliveries.length).toBe(BURST + failFirst.size);
    expect(attempts).toBe(BURST + failFirst.size);
    // The new worker delivered retries that the old one handed back at its stop.
    expect(sentByNew).toBeGreaterThan(0);
    expect(sentByNew).toBeLessThanOrEqual(failFirst.size);
  } finally {
    await old.worker.stop("SIGKILL");
    if (next) expect(await next.worker.stop()).toBe(0);
  }
}, 300_000);

/** When a worker logged that it took the signal (its "shutting down" line's time), in ms since the epoch. */
function shutdownLoggedAt(output: string): number {
  for (const line of output.split("\n")) {
    if (!line.includes('"msg":"shutting down"')) continue;
    return (JSON.parse(line) as { time: number }).time;
  }
  throw new Error(`the worker did not log its shutdown:\n${output.slice(-5_000)}`);
}
