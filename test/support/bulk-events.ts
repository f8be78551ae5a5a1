import { createEventCreator, type EventQueue, type EventRecord } from "@punctual/core";
import type { TestContext } from "./context.ts";

/** Creates that go out together, as many clients' requests arriving at once would. */
const CHUNK = 1_000;

/**
 * Creates `count` Pending events due at `scheduledTime` the way the API creates many at once:
 * creates arriving together share one INSERT with their quota units (`createEventCreator`), and
 * their jobs are added together. For bursts of thousands: `scheduleBurst` creates one event per
 * statement, which took 32 s for 5,000 on a loaded 2-core machine. Returns them in creation order.
 */
export async function createBurstTogether(
  context: TestContext,
  eventQueue: EventQueue,
  input: { orgId: string; destination: string; scheduledTime: Date; count: number; payload?: string },
): Promise<EventRecord[]> {
  const { count, payload, ...event } = input;
  const creator = createEventCreator(context.db, context.config.MAX_EVENTS_PER_MONTH);
  const events: EventRecord[] = [];
  while (events.length < count) {
    const size = Math.min(CHUNK, count - events.length);
    const now = new Date();
    const created = await Promise.all(
      Array.from({ length: size }, () =>
        creator.create({ payload: payload ?? JSON.stringify({ hello: "world" }), ...event }, now),
      ),
    );
    const chunk = created.map((result) => result.event);
    await eventQueue.scheduleMany(chunk);
    events.push(...chunk);
  }
  return events;
}
