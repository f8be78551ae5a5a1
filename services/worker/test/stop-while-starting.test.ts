import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { exitOf, freePort, signalService, startService, workerProcessEnv } from "../../../test/support/processes.ts";
import { startReceiver } from "../../../test/support/receiver.ts";

// A worker asked to stop while it is still starting (its warm-up lasts seconds, longer on a busy
// machine) stops like a started one: exit 0, nothing taken. `docker compose stop` right after a
// start or a restart sends exactly that SIGTERM; Node's default action used to end the process by
// the signal (exit 143).
let context: TestContext;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

describe("SIGTERM during the start", () => {
  it("ends the warm-up early, takes no job and exits 0", async () => {
    const receiver = await startReceiver();
    // An event due now, queued before the worker starts: a worker that went on to take jobs after
    // the signal would deliver it.
    const { eventQueue } = createTestApiDeps(context).deps;
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url,
      scheduledTime: new Date(Date.now() + 200),
    });
    const worker = startService("worker", {
      ...workerProcessEnv(context.config, await freePort()),
      LOG_LEVEL: "info",
      // Minutes of warm-up: the signal surely falls inside it.
      WORKER_WARMUP_REQUESTS: "2000000",
    });
    try {
      await expect.poll(() => worker.output().includes('"msg":"warming up'), { timeout: 60_000 }).toBe(true);
      const exited = exitOf(worker);
      signalService(worker, "SIGTERM");
      expect(await exited).toBe(0);
      expect(worker.output()).toContain('"msg":"stopped"');
      expect(worker.output()).not.toContain("worker started");
      expect(receiver.deliveriesOf(event.id)).toEqual([]);
      expect(await statusOf(context, event.id)).toBe("Pending");
    } finally {
      await worker.stop();
      await receiver.close();
    }
  }, 120_000);
});
