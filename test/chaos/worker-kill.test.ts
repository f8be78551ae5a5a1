import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { scheduleBurst } from "../support/events.ts";
import { type ServiceProcess, startWorkerProcess } from "../support/processes.ts";
import type { Receiver } from "../support/receiver.ts";
import { countDeliveries } from "./chaos-report.ts";
import { exitSignal, startCountingReceiver } from "./killed-worker.ts";

// Chaos 3: a worker process with default settings is killed (SIGKILL: no shutdown) 0.4 s into a
// burst of 500 it alone holds, and another worker starts at once. The dead worker's jobs run again on the other
// one once their locks expire (JOB_LOCK_MS): every event ends Sent. Outcomes are recorded a few
// milliseconds behind the answers, so only the requests in flight at the kill (at most the origin's
// cap, ORIGIN_CONCURRENCY = 50) plus the few answered but not yet committed can be sent twice.

const BURST = 500;
/** Each answer takes this long, so the burst (50 at a time) is still under way 0.4 s in. */
const ANSWER_MS = 100;
const KILL_AFTER_MS = 400;
const RUNS = 3;
/**
 * Duplicates are bounded by what was in flight: the worker's attempts on the wire (at most the
 * origin's cap, 50: the receiver's count of unanswered requests misses those still on their way)
 * and the few answered but not yet committed.
 */
const MAX_DUPLICATES = 60;

let context: TestContext;
let receiver: Receiver;
/** Requests that have arrived and not been answered yet. */
let unanswered: () => number;

beforeAll(async () => {
  context = await createTestContext({ MAX_EVENTS_PER_MONTH: "100000" });
  ({ receiver, unanswered } = await startCountingReceiver(ANSWER_MS));
});

afterAll(async () => {
  await receiver.close();
  await context.close();
});

/** A worker process with the defaults (only where to find things, and the port, are set). */
async function startWorker(overrides: Record<string, string> = {}): Promise<ServiceProcess> {
  return (await startWorkerProcess(context.config, overrides)).worker;
}

it(`a default worker killed 0.4 s into a burst of ${BURST}, ${RUNS} times: none lost, duplicates within what was in flight, all final within 60 s`, async () => {
  for (let run = 1; run <= RUNS; run++) {
    const first = await startWorker();
    let second: ServiceProcess | undefined;
    try {
      const org = await createTestOrganization(context);
      const { eventQueue } = createTestApiDeps(context).deps;
      const due = new Date(Date.now() + 5_000);
      const events = await scheduleBurst(context, eventQueue, {
        orgId: org.orgId,
        destination: receiver.url,
        scheduledTime: due,
        count: BURST,
      });
      const ids = new Set(events.map((event) => event.id));
      const arrivals = () => receiver.deliveries.filter((d) => ids.has(String(d.headers["webhook-id"]))).length;

      // Killed 0.4 s after the instant, the one worker holding the whole burst; another starts at once.
      await new Promise((resolve) => setTimeout(resolve, due.getTime() + KILL_AFTER_MS - Date.now()));
      const inFlightAtKill = unanswered();
      const arrivedAtKill = arrivals();
      first.child.kill("SIGKILL");
      const killedAt = Date.now();
      expect(await exitSignal(first)).toBe("SIGKILL");
      second = await startWorker();
      // The kill really fell in the middle of the burst.
      expect(arrivedAtKill).toBeGreaterThan(0);
      expect(arrivedAtKill).toBeLessThan(BURST);

      await expect
        .poll(
          () => context.db.event.count({ where: { orgId: org.orgId, status: { in: ["Sent", "Failed To Send"] } } }),
          {
            timeout: 60_000,
            interval: 200,
          },
        )
        .toBe(BURST);
      const finalAfterMs = Date.now() - killedAt;
      expect(finalAfterMs).toBeLessThan(60_000);
      expect(await context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } })).toBe(BURST);
      await expect.poll(() => unanswered()).toBe(0);
      const counts = countDeliveries(
        `default worker SIGKILL 0.4 s into ${BURST} (run ${run}; ${arrivedAtKill} arrived, ${inFlightAtKill} in flight at the kill; all final ${finalAfterMs} ms after it)`,
        receiver,
        events,
        BURST,
      );
      expect(counts.lost).toBe(0);
      expect(counts.duplicated).toBeLessThanOrEqual(MAX_DUPLICATES);
    } finally {
      await first.stop("SIGKILL");
      if (second) expect(await second.stop()).toBe(0);
    }
  }
}, 240_000);
