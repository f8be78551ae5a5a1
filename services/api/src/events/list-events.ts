import {
  badRequest,
  type Config,
  FLOW_KEY_INVALID,
  LABEL_FILTER_INVALID,
  parseInput,
  toEventView,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";
import { queryParameters } from "../routing/parameters.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";
import { listVisibleEvents, searchWindowStart, type VisibilityWindow } from "./event-queries.ts";
import { TOO_MANY_LABEL_FILTERS } from "./label-schemas.ts";
import { encodeCursor, INVALID_CURSOR, LIST_ORDER_ONE_OF, listEventsQuerySchema, MAX_LIST_LIMIT } from "./schemas.ts";

/** Header carrying the cursor of the next page when there is one. */
export const NEXT_CURSOR_HEADER = "X-Next-Cursor";

/** The largest `limit` accepted: the list's own cap, or the deployment's page size if larger. */
const maxListLimit = (config: Pick<Config, "MAX_LIST_RESULTS">) => Math.max(MAX_LIST_LIMIT, config.MAX_LIST_RESULTS);

/**
 * Contract §3: a sent/failed start bound must lie within the search window (not more than
 * `SEARCH_WINDOW_DAYS` back, not in the future).
 */
export function checkSearchable(
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
 * GET /api/events: the organization's visible events, by scheduledTime then id (or the reverse), at most
 * `MAX_LIST_RESULTS` (or `limit`) per page; `X-Next-Cursor` points at the next page.
 */
export const listEventsRoute = defineRoute({
  method: "get",
  path: "/api/events",
  operationId: "getManyEvents",
  summary: "List events",
  description: (config) =>
    `Visible events of the organization, by \`scheduledTime\` then \`id\` (newest first with \`order=desc\`), at most ${config.MAX_LIST_RESULTS} ` +
    `per page. Start bounds are inclusive, end bounds exclusive; \`flowKey\` and \`label\` (contract §10.5) narrow ` +
    `the list to a flow and to events carrying labels. When more results exist the answer carries ` +
    `\`${NEXT_CURSOR_HEADER}\`; pass it back as \`cursor\`.`,
  tag: "Events",
  security: "apiKey",
  parameters: (config) =>
    queryParameters(listEventsQuerySchema(maxListLimit(config)), {
      scheduledStartDate: "`scheduledTime` at or after this time (ISO 8601 with a zone)",
      scheduledEndDate: "`scheduledTime` before this time",
      sentAtStartDate: `\`sentAt\` at or after this time; at most ${config.SEARCH_WINDOW_DAYS} days back, not in the future`,
      sentAtEndDate: "`sentAt` before this time",
      failedAtStartDate: `\`failedAt\` at or after this time; at most ${config.SEARCH_WINDOW_DAYS} days back, not in the future`,
      failedAtEndDate: "`failedAt` before this time",
      limit: `Page size, 1 to ${maxListLimit(config)} (capped at ${config.MAX_LIST_RESULTS})`,
      flowKey: "Only events of this flow (contract §10.2)",
      label:
        "`key:value` (contract §10.5): only events carrying this label. Repeat it (at most 10) for events carrying every one",
      order: "`asc` (the default): oldest `scheduledTime` first; `desc`: newest first",
    }),
  failure: "Unable to get events",
  responses: {
    "200": {
      description: "The page of events (a plain array).",
      json: { type: "array", items: { $ref: "#/components/schemas/Event" } },
      headers: [NEXT_CURSOR_HEADER],
    },
    "400": errorResponse(
      "A query parameter is invalid.",
      "Invalid status: Done",
      "Invalid date: scheduledStartDate",
      "sentAtStartDate is outside of the searchable range",
      "failedAtStartDate is outside of the searchable range",
      INVALID_CURSOR,
      LIST_ORDER_ONE_OF,
      "Unknown query parameter 'foo'",
      FLOW_KEY_INVALID,
      LABEL_FILTER_INVALID,
      TOO_MANY_LABEL_FILTERS,
    ),
  },
  handler: (deps: ApiDeps) => {
    const maxResults = deps.config.MAX_LIST_RESULTS;
    const QuerySchema = listEventsQuerySchema(maxListLimit(deps.config));
    // The query's parameters are the schema's fields; anything else is refused by name. `label` is
    // the one that may be repeated (every one must match).
    const parameters = new Set(Object.keys(QuerySchema.shape).filter((name) => name !== "label"));
    return async (req: Request, res: Response) => {
      const { label, ...single } = req.query;
      const query = parseInput(QuerySchema, { ...singleValuedQuery(single, parameters), label });
      const window = { now: deps.clock.now(), searchWindowDays: deps.config.SEARCH_WINDOW_DAYS };
      checkSearchable("sentAtStartDate", query.sentAtStartDate, window);
      checkSearchable("failedAtStartDate", query.failedAtStartDate, window);

      const pageSize = Math.min(query.limit ?? maxResults, maxResults);
      // One row more than the page tells whether another page exists.
      const events = await listVisibleEvents(
        deps.db,
        res.locals.orgId,
        { ...query, statuses: query.status, labels: query.label, after: query.cursor, limit: pageSize + 1 },
        window,
      );
      const page = events.slice(0, pageSize);
      const last = page.at(-1);
      if (events.length > pageSize && last) {
        res.setHeader(NEXT_CURSOR_HEADER, encodeCursor({ scheduledTime: last.scheduledTime, id: last.id }));
      }
      res.json(page.map((event) => toEventView(event, deps.config)));
    };
  },
});
