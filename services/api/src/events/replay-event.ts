import { EVENT_NOT_FOUND, ONLY_SENT_OR_FAILED, parseInput, replayEvent, toEventView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { quotaNoticesOf } from "../webhooks/quota-notices.ts";
import { EVENT_ID_PARAMETER } from "./get-event.ts";
import { tryQueueOperation } from "./queueing.ts";
import { eventRequestSchemas, monthlyLimitReached, TIME_IN_FUTURE, TIME_ZONE_REQUIRED, VALID_TIME } from "./schemas.ts";

/**
 * POST /api/events/:eventId/replay: a new Pending event with the payload and destination of a sent
 * or failed one, due at `scheduledTime` or now. Committed (with its quota unit) before the answer,
 * then queued; a queue failure leaves it to the reconciler, as for a create.
 */
export const replayEventRoute = defineRoute({
  method: "post",
  path: "/api/events/{eventId}/replay",
  operationId: "replayEvent",
  summary: "Replay a sent or failed event",
  description:
    "Creates a new `Pending` event with the same payload and destination, due at `scheduledTime` or now, " +
    "whose `replayOf` names the original; the original is left as it is. Allowed for `Sent`, " +
    "`Failed To Send` and `Failed To Queue` events that are still visible. Counts against the monthly limit.",
  tag: "Events",
  security: "apiKey",
  parameters: [EVENT_ID_PARAMETER],
  body: {
    component: "ReplayEventRequest",
    schema: (limits) => eventRequestSchemas(limits).ReplayEventSchema,
    optional: true,
  },
  failure: "Unable to replay the event",
  responses: {
    "200": { description: "The new event; `replayOf` is the original's id.", json: "Event" },
    "400": errorResponse(
      "The event is not sent or failed, or the body is invalid.",
      ONLY_SENT_OR_FAILED,
      TIME_IN_FUTURE,
      TIME_ZONE_REQUIRED,
      VALID_TIME,
    ),
    "403": errorResponse("The organization's monthly quota of scheduled events is used up.", monthlyLimitReached),
    "404": errorResponse("No such event in this organization, or no longer visible.", EVENT_NOT_FOUND),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, ReplayEventSchema) => {
    const quotaNotices = quotaNoticesOf(deps);
    return async (req: Request, res: Response) => {
      const input = parseInput(ReplayEventSchema, req.body ?? {});
      const now = deps.clock.now();
      const orgId = res.locals.orgId;
      const event = await replayEvent(
        deps.db,
        { orgId, eventId: String(req.params.eventId), scheduledTime: input.scheduledTime ?? now },
        { now, searchWindowDays: deps.config.SEARCH_WINDOW_DAYS },
        deps.config.MAX_EVENTS_PER_MONTH,
      ).catch(quotaNotices.onRefusal(orgId, res.locals.log));
      await tryQueueOperation(res.locals.log, "queueing the replay", event.id, () => deps.eventQueue.schedule(event));
      res.json(toEventView(event, deps.config));
    };
  },
});
