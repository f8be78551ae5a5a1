import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { startTestWorker } from "../../../test/support/worker.ts";

// The default retry schedule of contract §5: 3 s, 5 s and 10 s after the previous attempt.

let context: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  context = await createTestContext({ WORKER_HEALTH_PORT: "0" });
  expect(context.config.RETRY_DELAYS_MS).toEqual([3000, 5000, 10000]);
  receiver = await startTestReceiver(context, { status: () => 500 });
  await startTestWorker(context);
});

afterAll(() => context?.close());

it("tries a failing receiver 4 times, 3 s, 5 s and 10 s apart, then marks the event Failed To Send", async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  const event = await scheduleEvent(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: new Date(Date.now() + 300),
  });

  await expect.poll(() => statusOf(context, event.id), { timeout: 30_000, interval: 200 }).toBe("Failed To Send");
  const arrivals = receiver.deliveriesOf(event.id).map((delivery) => delivery.at);
  expect(arrivals).toHaveLength(4);
  const gaps = arrivals.slice(1).map((at, n) => at - (arrivals[n] as number));
  for (const [gap, expected] of gaps.map((gap, n) => [gap, [3000, 5000, 10000][n] as number])) {
    expect(gap).toBeGreaterThanOrEqual(expected as number);
    expect(gap).toBeLessThan((expected as number) + 1_000);
  }

  const stored = await context.db.event.findUniqueOrThrow({ where: { id: event.id } });
  expect(stored.failedAt).toBeInstanceOf(Date);
  expect(stored.sentAt).toBeNull();
  const attempts = await context.db.eventAttempt.findMany({
    where: { eventId: event.id },
    orderBy: { attempt: "asc" },
  });
  expect(attempts.map((attempt) => [attempt.attempt, attempt.responseStatus, attempt.error])).toEqual([
    [1, 500, "Receiver answered 500"],
    [2, 500, "Receiver answered 500"],
    [3, 500, "Receiver answered 500"],
    [4, 500, "Receiver answered 500"],
  ]);
  // Nothing more arrives after the final status.
  expect(receiver.deliveriesOf(event.id)).toHaveLength(4);
}, 45_000);
