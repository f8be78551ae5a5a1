import {
  EVENT_NOT_FOUND,
  FLOW_KEY_INVALID,
  notFound,
  ONLY_PENDING,
  parseInput,
  REFUSED_DESTINATION_EXAMPLE,
  toEventView,
  updatePendingEvent,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { POLICY_REFUSALS_WITH_PAYLOAD } from "../delivery-policy/schemas.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { quotaNoticesOf } from "../webhooks/quota-notices.ts";
import { findVisibleEvent } from "./event-queries.ts";
import { EVENT_ID_PARAMETER } from "./get-event.ts";
import { LABEL_REFUSALS } from "./label-schemas.ts";
import { tryQueueOperation } from "./queueing.ts";
import {
  eventRequestSchemas,
  monthlyLimitReached,
  ONLY_CANCEL,
  policyEditOf,
  TIME_IN_FUTURE,
  TIME_ZONE_REQUIRED,
} from "./schemas.ts";

/**
 * PUT /api/events/:eventId: edits or cancels a Pending event. The change is committed by the
 * lifecycle (which refuses anything but Pending); the queue follows afterwards: a cancel drops the
 * job, a new time moves it, and the workers hear of the change. A queue failure is harmless: a stale job finds the event cancelled or
 * not yet due and does nothing, and the reconciler restores a missing one.
 */
export const updateEventRoute = defineRoute({
  method: "put",
  path: "/api/events/{eventId}",
  operationId: "editEvent",
  summary: "Edit or cancel a pending event",
  description:
    "Changes the fields given. A delivery policy field (contract §10.1) replaces that field of the event's stored " +
    "policy; given as `null` it is removed, so the deployment's default applies again (the organization's default " +
    'is not applied again: it was taken when the event was created). With `body: "raw"` and a JSON ' +
    "`Content-Type` header in the resulting policy, the resulting payload must be JSON. `flowKey` (contract §10.2) " +
    "moves the event to another flow; `null` takes it out of its flow. `labels` (contract §10.5) replaces all of its " +
    "labels; `null` (or `{}`) removes them. A refused edit changes nothing.",
  tag: "Events",
  security: "apiKey",
  parameters: [EVENT_ID_PARAMETER],
  body: { component: "UpdateEventRequest", schema: (limits) => eventRequestSchemas(limits).UpdateEventSchema },
  failure: "Unable to update the event",
  responses: {
    "200": { description: "The updated event.", json: "Event" },
    "400": errorResponse(
      "Invalid change, or the event is no longer Pending.",
      ONLY_PENDING,
      ONLY_CANCEL,
      TIME_IN_FUTURE,
      TIME_ZONE_REQUIRED,
      REFUSED_DESTINATION_EXAMPLE,
      ...POLICY_REFUSALS_WITH_PAYLOAD,
      FLOW_KEY_INVALID,
      ...LABEL_REFUSALS,
    ),
    "403": errorResponse("Moving the event into a month whose quota is used up.", monthlyLimitReached),
    "404": errorResponse("No such event in this organization, or no longer visible.", EVENT_NOT_FOUND),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, UpdateEventSchema) => {
    const quotaNotices = quotaNoticesOf(deps);
    return async (req: Request, res: Response) => {
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
        {
          payload: changes.payload,
          destination: changes.destination,
          scheduledTime: changes.scheduledTime,
          cancel,
          deliveryPolicy: policyEditOf(changes),
          flowKey: changes.flowKey,
          callbackUrl: changes.callbackUrl,
          labels: changes.labels,
        },
        now,
        deps.config.MAX_EVENTS_PER_MONTH,
      ).catch(quotaNotices.onRefusal(orgId, res.locals.log));

      if (cancel) {
        await tryQueueOperation(res.locals.log, "removing the cancelled event's job", eventId, () =>
          deps.eventQueue.unschedule(eventId),
        );
      } else if (updated.scheduledTime.getTime() !== current.scheduledTime.getTime()) {
        await tryQueueOperation(res.locals.log, "moving the event's job", eventId, () =>
          deps.eventQueue.schedule(updated, { replace: true }),
        );
      }
      // A worker may hold the job prepared ahead of its time: it reads the event again. Without it the
      // claim would still refuse a cancelled event and send the new payload, but a time moved earlier
      // would wait for the old one.
      await tryQueueOperation(res.locals.log, "announcing the change to the workers", eventId, () =>
        deps.eventQueue.announceChange(eventId),
      );
      res.json(toEventView(updated, deps.config));
    };
  },
});
