import { daysBefore, EVENT_NOT_FOUND, notFound, readCallbacks, toEventView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { pathParameter } from "../routing/parameters.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";
import { findRecentAttempts, findVisibleEvent } from "./event-queries.ts";
import type { EventWithHistory } from "./schemas.ts";

export const EVENT_ID_PARAMETER = pathParameter("eventId", "The event's id (`evt_…`)");

/** GET /api/events/:eventId: the event with its delivery attempts of the last `HISTORY_DAYS` days. */
export const getEventRoute = defineRoute({
  method: "get",
  path: "/api/events/{eventId}",
  operationId: "getEvent",
  summary: "Get an event with its delivery history",
  tag: "Events",
  security: "apiKey",
  parameters: [EVENT_ID_PARAMETER],
  failure: "An error occurred finding the event",
  responses: {
    "200": {
      description: (config) => `The event and its delivery attempts of the last ${config.HISTORY_DAYS} days.`,
      json: "EventWithHistory",
    },
    "404": errorResponse("No such event in this organization, or no longer visible.", EVENT_NOT_FOUND),
  },
  handler: (deps: ApiDeps) => async (req: Request, res: Response) => {
    const now = deps.clock.now();
    const event = await findVisibleEvent(deps.db, res.locals.orgId, String(req.params.eventId), {
      now,
      searchWindowDays: deps.config.SEARCH_WINDOW_DAYS,
    });
    if (!event) throw notFound(EVENT_NOT_FOUND);
    const since = daysBefore(now, deps.config.HISTORY_DAYS);
    const [history, callbacks] = await Promise.all([
      findRecentAttempts(deps.db, event.id, since),
      event.callbackUrl === null ? undefined : readCallbacks(deps.db, [event.id]),
    ]);
    const callback = callbacks?.get(event.id);
    const body = {
      ...toEventView(event, deps.config),
      history,
      ...(callback ? { callback } : {}),
    } as EventWithHistory;
    res.json(body);
  },
});
