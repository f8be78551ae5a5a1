import {
  badRequest,
  cancelPendingEvents,
  FLOW_KEY_INVALID,
  filtersSomething,
  LABEL_FILTER_INVALID,
  MAX_BULK_CANCEL,
  parseInput,
} from "@punctual/core";
import type { Request, Response } from "express";
import { z } from "zod";
import type { ApiDeps } from "../api-deps.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { TOO_MANY_LABEL_FILTERS } from "./label-schemas.ts";
import { checkSearchable } from "./list-events.ts";
import { tryQueueOperation } from "./queueing.ts";
import { eventFilterShape } from "./schemas.ts";

// POST /api/events/cancel (contract §10.5): cancels the organization's Pending events that match the
// filters of GET /api/events, as PUT /api/events/{id} with status Cancelled does one at a time.

export const CANCEL_FILTER_REQUIRED =
  "At least one filter is required; to cancel every pending event, give 'status': 'Pending'";

/** POST /api/events/cancel body: the list filters, in JSON (`label` a string or a list). */
export const bulkCancelSchema = () => z.strictObject(eventFilterShape);

export const CancelEventsResultSchema = z
  .object({ cancelled: z.number().int().meta({ description: "How many events were cancelled" }) })
  .meta({ id: "CancelEventsResult" });

export const cancelEventsRoute = defineRoute({
  method: "post",
  path: "/api/events/cancel",
  operationId: "cancelEvents",
  summary: "Cancel pending events in bulk",
  description:
    "Cancels the `Pending` events that match every filter given (those of `GET /api/events`, with `flowKey` and " +
    `\`label\` a string or a list of \`key:value\`): at most ${MAX_BULK_CANCEL}, oldest \`scheduledTime\` first; ` +
    "call again for more. Each becomes `Cancelled` as with `PUT /api/events/{eventId}`: its unit of the monthly " +
    "quota comes back and its job leaves the queue. An event a worker has claimed (`Queued`) is being delivered " +
    "and is not cancelled: an event ends delivered or cancelled, never both. At least one filter is required " +
    '(`status: "Pending"` alone selects every pending event). A filter that matches nothing answers ' +
    '`{ "cancelled": 0 }`.',
  tag: "Events",
  security: "apiKey",
  body: { component: "CancelEventsRequest", schema: () => bulkCancelSchema() },
  failure: "Unable to cancel the events",
  responses: {
    "200": { description: "How many events were cancelled.", json: "CancelEventsResult" },
    "400": errorResponse(
      "The body is invalid, or gives no filter.",
      CANCEL_FILTER_REQUIRED,
      "Invalid status: Done",
      "Invalid date: scheduledStartDate",
      "sentAtStartDate is outside of the searchable range",
      FLOW_KEY_INVALID,
      LABEL_FILTER_INVALID,
      TOO_MANY_LABEL_FILTERS,
      "Unknown field 'foo'",
    ),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, CancelSchema) => async (req: Request, res: Response) => {
    const { status, label, ...rest } = parseInput(CancelSchema, req.body ?? {});
    const now = deps.clock.now();
    const window = { now, searchWindowDays: deps.config.SEARCH_WINDOW_DAYS };
    checkSearchable("sentAtStartDate", rest.sentAtStartDate, window);
    checkSearchable("failedAtStartDate", rest.failedAtStartDate, window);
    const filter = { ...rest, statuses: status, labels: label };
    if (!filtersSomething(filter)) throw badRequest(CANCEL_FILTER_REQUIRED);
    const log = res.locals.log;
    const cancelled = await cancelPendingEvents(deps.db, res.locals.orgId, filter, now, async (ids) => {
      // Committed: their jobs go (a job left behind finds its event Cancelled and does nothing, and a
      // worker holding one prepared is refused by the claim).
      await tryQueueOperation(log, "removing the cancelled events' jobs", ids[0] ?? "", () =>
        Promise.all(ids.map((id) => deps.eventQueue.unschedule(id))).then(() => undefined),
      );
    });
    res.json({ cancelled });
  },
});
