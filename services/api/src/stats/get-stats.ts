import { badRequest, DAY_MS, parseInput } from "@punctual/core";
import type { Request, Response } from "express";
import { z } from "zod";
import type { ApiDeps } from "../api-deps.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";
import { tidy } from "../openapi/json-schema.ts";
import { queryParameters } from "../routing/parameters.ts";
import { defineRoute, errorResponse, type Json } from "../routing/route.ts";
import {
  BUCKET_ONE_OF,
  DEFAULT_WINDOW_MS,
  EARLIEST_BOUND,
  FROM_BEFORE_TO,
  FROM_REQUIRED,
  invalidDate,
  MAX_WINDOW_DAYS,
  StatsQuerySchema,
  StatsSchema,
  WINDOW_TOO_LONG,
} from "./schemas.ts";
import { createStatsCache, settleMs } from "./stats-cache.ts";
import { loadStats, type StatsWindow } from "./stats-query.ts";

/** The query's parameters: anything else is refused by name. */
const PARAMETERS = new Set(Object.keys(StatsQuerySchema.shape));

/**
 * The window asked for: `to` defaults to now, `from` to 24 hours before `to`. A default bound is
 * held to the rules of the parameters: one before year 1 would fail in the query (Postgres has no
 * year 0), so it is refused as the client's.
 */
export function statsWindow(query: z.output<typeof StatsQuerySchema>, now: Date): StatsWindow {
  const to = query.to ?? now;
  const from = query.from ?? new Date(to.getTime() - DEFAULT_WINDOW_MS);
  if (from.getTime() < EARLIEST_BOUND.getTime()) throw badRequest(FROM_REQUIRED);
  if (from.getTime() >= to.getTime()) throw badRequest(FROM_BEFORE_TO);
  if (to.getTime() - from.getTime() > MAX_WINDOW_DAYS * DAY_MS) throw badRequest(WINDOW_TOO_LONG);
  return { from, to, bucket: query.bucket ?? "hour" };
}

const { $schema: _schema, ...statsJson } = tidy(z.toJSONSchema(StatsSchema, { io: "output" })) as Json;

/**
 * GET /api/stats: the organization's deliveries per bucket (outcomes, retries, first-attempt
 * lateness), this month's usage and the destinations failing most, for the console's overview.
 */
export const getStatsRoute = defineRoute({
  method: "get",
  path: "/api/stats",
  operationId: "getStats",
  summary: "Delivery statistics",
  description:
    `Deliveries of the organization per UTC hour or day over a window of at most ${MAX_WINDOW_DAYS} days ` +
    "(default: the last 24 hours): events and cron runs sent and failed (by when their outcome was " +
    "recorded), failed attempts that were retried, and the p50/p99 lateness of first attempts. Every " +
    "bucket of the window is listed, oldest first; the first and last count only what happened inside " +
    "the window. Also this UTC month's scheduled events against the monthly limit, and the (at most 5) " +
    "destinations with the most failed attempts in the window. A bucket that ended more than " +
    "`DELIVERY_TIMEOUT_MS` + the longest retry delay + 5 minutes ago can no longer change: each API process " +
    "computes it once and answers it as computed from then on.",
  tag: "Events",
  security: "apiKey",
  parameters: queryParameters(StatsQuerySchema),
  failure: "Unable to compute statistics",
  responses: {
    "200": { description: "The statistics of the window.", json: statsJson },
    "400": errorResponse(
      "A query parameter is invalid.",
      invalidDate("from"),
      invalidDate("to"),
      FROM_REQUIRED,
      FROM_BEFORE_TO,
      WINDOW_TOO_LONG,
      BUCKET_ONE_OF,
      "Unknown query parameter 'foo'",
    ),
  },
  handler: (deps: ApiDeps) => {
    // One per app (so per API process): settled hours are computed once.
    const buckets = createStatsCache({ settleMs: settleMs(deps.config), now: () => deps.clock.now() });
    return async (req: Request, res: Response) => {
      const query = parseInput(StatsQuerySchema, singleValuedQuery(req.query, PARAMETERS));
      const now = deps.clock.now();
      const window = statsWindow(query, now);
      const usage = { now, monthlyLimit: deps.config.MAX_EVENTS_PER_MONTH };
      res.json(await loadStats(deps.db, res.locals.orgId, window, usage, buckets));
    };
  },
});
