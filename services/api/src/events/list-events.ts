import { badRequest, parseInput, toEventView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { failsWith } from "../middleware/errors.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";
import { listVisibleEvents, searchWindowStart, type VisibilityWindow } from "./event-queries.ts";
import { encodeCursor, listEventsQuerySchema, MAX_LIST_LIMIT } from "./schemas.ts";

const PARAMETERS = new Set([
  "status",
  "scheduledStartDate",
  "scheduledEndDate",
  "sentAtStartDate",
  "sentAtEndDate",
  "failedAtStartDate",
  "failedAtEndDate",
  "limit",
  "cursor",
]);

/** Header carrying the cursor of the next page when there is one. */
export const NEXT_CURSOR_HEADER = "X-Next-Cursor";

/**
 * Contract §3: a sent/failed start bound must lie within the search window (not more than
 * `SEARCH_WINDOW_DAYS` back, not in the future).
 */
function checkSearchable(
  name: "sentAtStartDate" | "failedAtStartDate",
  value: Date | undefined,
  window: VisibilityWindow,
) {
  if (value === undefined) return;
  if (value.getTime() > window.now.getTime() || value.getTime() < searchWindowStart(window).getTime()) {
    throw badRequest(`${name} is outside of the searchable range`);
  }
}

/**
 * GET /api/events: the organization's visible events, by scheduledTime then id, at most
 * `MAX_LIST_RESULTS` (or `limit`) per page; `X-Next-Cursor` points at the next page.
 */
export function listEventsHandler(deps: ApiDeps) {
  const maxResults = deps.config.MAX_LIST_RESULTS;
  const QuerySchema = listEventsQuerySchema(Math.max(MAX_LIST_LIMIT, maxResults));
  return failsWith("Unable to get events", async (req: Request, res: Response) => {
    const query = parseInput(QuerySchema, singleValuedQuery(req.query, PARAMETERS));
    const window = { now: deps.clock.now(), searchWindowDays: deps.config.SEARCH_WINDOW_DAYS };
    checkSearchable("sentAtStartDate", query.sentAtStartDate, window);
    checkSearchable("failedAtStartDate", query.failedAtStartDate, window);

    const pageSize = Math.min(query.limit ?? maxResults, maxResults);
    // One row more than the page tells whether another page exists.
    const events = await listVisibleEvents(
      deps.db,
      res.locals.orgId,
      { ...query, statuses: query.status, after: query.cursor, limit: pageSize + 1 },
      window,
    );
    const page = events.slice(0, pageSize);
    const last = page.at(-1);
    if (events.length > pageSize && last) {
      res.setHeader(NEXT_CURSOR_HEADER, encodeCursor({ scheduledTime: last.scheduledTime, id: last.id }));
    }
    res.json(page.map(toEventView));
  });
}
