import { MAX_BULK_REPLAY, parseInput, replayFailedEvents } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { quotaNoticesOf } from "../webhooks/quota-notices.ts";
import { checkSearchable } from "./list-events.ts";
import { tryQueueOperation } from "./queueing.ts";
import { BULK_REPLAY_STATUS, type BulkReplayResult, bulkReplaySchema, monthlyLimitReached } from "./schemas.ts";

/**
 * POST /api/events/replay: replays the organization's failed events that match the list filters
 * (and were not replayed yet), all due now, in one statement; then queues the new events together.
 */
export const replayEventsRoute = defineRoute({
  method: "post",
  path: "/api/events/replay",
  operationId: "replayEvents",
  summary: "Replay failed events in bulk",
  description: (config) =>
    "Replays, due now, the visible `Failed To Send` / `Failed To Queue` events that match the filters of " +
    `\`GET /api/events\` and were not replayed before: at most ${MAX_BULK_REPLAY}, oldest \`scheduledTime\` first. ` +
    "A repeated bulk replay therefore sends nothing twice; a replay that failed in turn is selected by the next one. " +
    `All of them count against the monthly limit (${config.MAX_EVENTS_PER_MONTH}): when the month has too few ` +
    "units left for every one, none is made (403). Start bounds are inclusive, end bounds exclusive.",
  tag: "Events",
  security: "apiKey",
  body: { component: "BulkReplayRequest", schema: () => bulkReplaySchema() },
  failure: "Unable to replay the events",
  responses: {
    "200": { description: "How many events were replayed, and the new events' ids.", json: "BulkReplayResult" },
    "400": errorResponse(
      "The body is invalid.",
      "'status' is required",
      BULK_REPLAY_STATUS,
      "Invalid date: failedAtStartDate",
      "failedAtStartDate is outside of the searchable range",
      "Unknown field 'foo'",
    ),
    "403": errorResponse("The month's quota has too few units left for every replay.", monthlyLimitReached),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, BulkReplaySchema) => {
    const quotaNotices = quotaNoticesOf(deps);
    return async (req: Request, res: Response) => {
      const { status, ...dates } = parseInput(BulkReplaySchema, req.body);
      const now = deps.clock.now();
      const orgId = res.locals.orgId;
      const window = { now, searchWindowDays: deps.config.SEARCH_WINDOW_DAYS };
      checkSearchable("sentAtStartDate", dates.sentAtStartDate, window);
      checkSearchable("failedAtStartDate", dates.failedAtStartDate, window);
      const events = await replayFailedEvents(
        deps.db,
        orgId,
        { statuses: status, ...dates },
        now,
        window,
        deps.config.MAX_EVENTS_PER_MONTH,
      ).catch(quotaNotices.onRefusal(orgId, res.locals.log));
      if (events.length > 0) {
        await tryQueueOperation(res.locals.log, "queueing the replays", events[0]?.id ?? "", () =>
          deps.eventQueue.scheduleMany(events),
        );
      }
      const body: BulkReplayResult = { replayed: events.length, events: events.map((event) => event.id) };
      res.json(body);
    };
  },
});
