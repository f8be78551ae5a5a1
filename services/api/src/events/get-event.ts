import { daysBefore, EVENT_NOT_FOUND, notFound, toEventView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { failsWith } from "../middleware/errors.ts";
import { findRecentAttempts, findVisibleEvent } from "./event-queries.ts";
import type { EventWithHistory } from "./schemas.ts";

/** GET /api/events/:eventId: the event with its delivery attempts of the last `HISTORY_DAYS` days. */
export function getEventHandler(deps: ApiDeps) {
  return failsWith("An error occurred finding the event", async (req: Request, res: Response) => {
    const now = deps.clock.now();
    const event = await findVisibleEvent(deps.db, res.locals.orgId, String(req.params.eventId), {
      now,
      searchWindowDays: deps.config.SEARCH_WINDOW_DAYS,
    });
    if (!event) throw notFound(EVENT_NOT_FOUND);
    const since = daysBefore(now, deps.config.HISTORY_DAYS);
    const history = await findRecentAttempts(deps.db, event.id, since);
    const body: EventWithHistory = { ...toEventView(event), history };
    res.json(body);
  });
}
