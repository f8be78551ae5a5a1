import { createEvent, type EventQueue, type EventRecord } from "@punctual/core";
import type { TestContext } from "./context.ts";

/** Creates a Pending event through the lifecycle and puts it on the queue, as the API does. */
export async function scheduleEvent(
  context: TestContext,
  eventQueue: EventQueue,
  input: { orgId: string; destination: string; scheduledTime: Date; payload?: string },
): Promise<EventRecord> {
  const { event } = await createEvent(
    context.db,
    { payload: input.payload ?? JSON.stringify({ hello: "world" }), ...input },
    new Date(),
    context.config.MAX_EVENTS_PER_MONTH,
  );
  await eventQueue.schedule(event);
  return event;
}

/**
 * Creates and queues `count` events all due at `scheduledTime`, 50 at a time (as many clients
 * would), and returns them in creation order.
 */
export async function scheduleBurst(
  context: TestContext,
  eventQueue: EventQueue,
  input: { orgId: string; destination: string; scheduledTime: Date; count: number },
): Promise<EventRecord[]> {
  const { count, ...event } = input;
  const events: EventRecord[] = [];
  while (events.length < count) {
    const size = Math.min(50, count - events.length);
    events.push(...(await Promise.all(Array.from({ length: size }, () => scheduleEvent(context, eventQueue, event)))));
  }
  return events;
}

/** The stored status of an event. */
export async function statusOf(context: TestContext, eventId: string): Promise<string | undefined> {
  return (await context.db.event.findUnique({ where: { id: eventId }, select: { status: true } }))?.status;
}
