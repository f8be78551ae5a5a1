import { createEvent, type EventRecord, type EventScheduler } from "@punctual/core";
import type { TestContext } from "./context.ts";

/** Creates a Pending event through the lifecycle and puts it on the queue, as the API does. */
export async function scheduleEvent(
  context: TestContext,
  scheduler: EventScheduler,
  input: { orgId: string; destination: string; scheduledTime: Date; payload?: string },
): Promise<EventRecord> {
  const { event } = await createEvent(
    context.db,
    { payload: input.payload ?? JSON.stringify({ hello: "world" }), ...input },
    new Date(),
    context.config.MAX_EVENTS_PER_MONTH,
  );
  await scheduler.schedule(event);
  return event;
}

/** The stored status of an event. */
export async function statusOf(context: TestContext, eventId: string): Promise<string | undefined> {
  return (await context.db.event.findUnique({ where: { id: eventId }, select: { status: true } }))?.status;
}
