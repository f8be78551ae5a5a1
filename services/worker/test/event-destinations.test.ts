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

// Contract §5: destinations resolving to loopback/private addresses are refused at delivery unless
// ALLOW_PRIVATE_DESTINATIONS=true.

let context: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    ALLOW_PRIVATE_DESTINATIONS: "false",
    RETRY_DELAYS_MS: "50,50,50",
  });
  receiver = await startTestReceiver(context);
  await startTestWorker(context);
});

afterAll(() => context?.close());

it.each([
  ["a literal loopback address", (url: string) => url],
  ["a name resolving to loopback", (url: string) => url.replace("127.0.0.1", "localhost")],
  ["an IPv4-mapped IPv6 loopback address", (url: string) => url.replace("127.0.0.1", "[::ffff:127.0.0.1]")],
])("refuses %s at every attempt and never connects", async (_name, destinationOf) => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  const event = await scheduleEvent(context, eventQueue, {
    orgId: org.orgId,
    destination: destinationOf(receiver.url),
    scheduledTime: new Date(Date.now() + 100),
  });
  await expect.poll(() => statusOf(context, event.id)).toBe("Failed To Send");
  const attempts = await context.db.eventAttempt.findMany({ where: { eventId: event.id } });
  expect(attempts).toHaveLength(4);
  expect(attempts.every((attempt) => attempt.error === "Destination address is not allowed")).toBe(true);
  expect(attempts.every((attempt) => attempt.responseStatus === null)).toBe(true);
  expect(receiver.deliveries).toHaveLength(0);
});

it("records the same error for a name that does not resolve as for a refused one", async () => {
  // Otherwise the history would tell a tenant which names resolve inside the worker's network.
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  const destinations = [
    "http://nothing.invalid/x", // RFC 6761: `.invalid` never resolves
    receiver.url.replace("127.0.0.1", "localhost"),
    receiver.url,
  ];
  const events = await Promise.all(
    destinations.map((destination) =>
      scheduleEvent(context, eventQueue, { orgId: org.orgId, destination, scheduledTime: new Date(Date.now() + 100) }),
    ),
  );
  for (const event of events) await expect.poll(() => statusOf(context, event.id)).toBe("Failed To Send");

  const attempts = await context.db.eventAttempt.findMany({ where: { eventId: { in: events.map((e) => e.id) } } });
  const errorsByDestination = destinations.map((destination, i) => ({
    destination,
    errors: attempts.filter((attempt) => attempt.eventId === events[i]?.id).map((attempt) => attempt.error),
  }));
  expect(errorsByDestination).toEqual(
    destinations.map((destination) => ({ destination, errors: Array(4).fill("Destination address is not allowed") })),
  );
  expect(receiver.deliveries).toHaveLength(0);
});
