import { EVENT_NOT_FOUND, notFound, parseInput, toEventView, updatePendingEvent } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { failsWith } from "../middleware/errors.ts";
import { findVisibleEvent } from "./event-queries.ts";
import { tryQueueOperation } from "./queueing.ts";
import { eventRequestSchemas } from "./schemas.ts";

/**
 * PUT /api/events/:eventId: edits or cancels a Pending event. The change is committed by the
 * lifecycle (which refuses anything but Pending); the queue follows afterwards: a cancel drops the
 * job, a new time moves it, and the workers hear of the change. A queue failure is harmless: a stale job finds the event cancelled or
 * not yet due and does nothing, and the reconciler restores a missing one.
 */
export function updateEventHandler(deps: ApiDeps) {
  const { UpdateEventSchema } = eventRequestSchemas({
    maxPayloadBytes: deps.config.MAX_PAYLOAD_BYTES,
    now: () => deps.clock.now(),
    allowPrivateDestinations: deps.config.ALLOW_PRIVATE_DESTINATIONS,
  });
  return failsWith("Unable to update the event", async (req: Request, res: Response) => {
    const changes = parseInput(UpdateEventSchema, req.body ?? {});
    const orgId = res.locals.orgId;
    const eventId = String(req.params.eventId);
    const now = deps.clock.now();
    // An event outside the search window is answered as missing, as GET does, not as "not Pending".
    const current = await findVisibleEvent(deps.db, orgId, eventId, {
      now,
      searchWindowDays: deps.config.SEARCH_WINDOW_DAYS,
    });
    if (!current) throw notFound(EVENT_NOT_FOUND);

    const cancel = changes.status === "Cancelled";
    const updated = await updatePendingEvent(
      deps.db,
      orgId,
      eventId,
      { payload: changes.payload, destination: changes.destination, scheduledTime: changes.scheduledTime, cancel },
      now,
      deps.config.MAX_EVENTS_PER_MONTH,
    );

    if (cancel) {
      await tryQueueOperation(res.locals.log, "removing the cancelled event's job", eventId, () =>
        deps.scheduler.unschedule(eventId),
      );
    } else if (updated.scheduledTime.getTime() !== current.scheduledTime.getTime()) {
      await tryQueueOperation(res.locals.log, "moving the event's job", eventId, () =>
        deps.scheduler.schedule(updated, { replace: true }),
      );
    }
    // A worker may hold the job prepared ahead of its time: it reads the event again. Without it the
    // claim would still refuse a cancelled event and send the new payload, but a time moved earlier
    // would wait for the old one.
    await tryQueueOperation(res.locals.log, "announcing the change to the workers", eventId, () =>
      deps.scheduler.announceChange(eventId),
    );
    res.json(toEventView(updated));
  });
}
