import {
  checkCronExpression,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  isValidTimezone,
  nextCronRuns,
  parseInput,
} from "@punctual/core";
import type { Request, Response } from "express";
import { z } from "zod";
import type { ApiDeps } from "../api-deps.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";
import { tidy } from "../openapi/json-schema.ts";
import { queryParameters } from "../routing/parameters.ts";
import { defineRoute, errorResponse, type Json } from "../routing/route.ts";
import { DEFAULT_TIMEZONE } from "./schemas.ts";

/** Where the preview is mounted: a path of its own, apart from `/api/cronjobs/{cronJobId}`. */
export const CRON_PREVIEW_PATH = "/api/cron-jobs";

export const MAX_PREVIEW_COUNT = 20;
const DEFAULT_PREVIEW_COUNT = 5;
export const PREVIEW_COUNT_RANGE = `'count' must be an integer between 1 and ${MAX_PREVIEW_COUNT}`;

/**
 * GET /api/cron-jobs/preview query. An expression and a zone are judged as cron job create judges
 * them, with the same words, except that an expression that never fires is answered (`neverFires`)
 * rather than refused: the preview is where that is found out. The expression is judged once, here;
 * the handler uses the verdict.
 */
export const CronPreviewQuerySchema = z.strictObject({
  expression: z
    .string()
    .transform((text, ctx) => {
      const check = checkCronExpression(text);
      if (check.kind !== "invalid") return check;
      ctx.addIssue({ code: "custom", message: INVALID_EXPRESSION });
      return z.NEVER;
    })
    .meta({ description: "Five space-separated fields: minute hour day-of-month month day-of-week" }),
  timezone: z
    .string()
    .refine(isValidTimezone, { message: INVALID_TIMEZONE })
    .optional()
    .meta({ description: `IANA time zone the expression is evaluated in; ${DEFAULT_TIMEZONE} when omitted` }),
  count: z
    .string()
    .regex(/^[0-9]{1,2}$/, PREVIEW_COUNT_RANGE)
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_PREVIEW_COUNT, { message: PREVIEW_COUNT_RANGE })
    .optional()
    .meta({ description: `How many times, 1 to ${MAX_PREVIEW_COUNT}; ${DEFAULT_PREVIEW_COUNT} when omitted` }),
});

export const CronPreviewSchema = z.strictObject({
  expression: z.string().meta({ description: "The expression as a cron job would store it" }),
  timezone: z.string(),
  times: z
    .array(z.string().meta({ format: "date-time" }))
    .meta({ description: "The next times it fires after now, oldest first (UTC)" }),
  neverFires: z.boolean().meta({ description: "True when no date matches (e.g. `0 0 30 2 *`); `times` is empty" }),
});

const PARAMETERS = new Set(Object.keys(CronPreviewQuerySchema.shape));
const { $schema: _schema, ...previewJson } = tidy(z.toJSONSchema(CronPreviewSchema, { io: "output" })) as Json;

/** GET /api/cron-jobs/preview: when an expression would fire, for the console's cron editor. */
export const previewCronJobRoute = defineRoute({
  method: "get",
  path: `${CRON_PREVIEW_PATH}/preview`,
  operationId: "previewCronJob",
  summary: "Preview a cron expression's next times",
  description:
    "The next times a cron job with this expression and time zone would fire, computed as the scheduler " +
    "computes them (daylight saving changes included). Creates nothing. Also answers at " +
    "`/api/cronjobs/preview` and `/api/cronJobs/preview`, the collection's spellings.",
  tag: "Cron jobs",
  security: "apiKey",
  parameters: queryParameters(CronPreviewQuerySchema),
  failure: "Unable to preview the cron expression",
  responses: {
    "200": { description: "The next times.", json: previewJson },
    "400": errorResponse(
      "A query parameter is invalid.",
      "'expression' is required",
      INVALID_EXPRESSION,
      INVALID_TIMEZONE,
      PREVIEW_COUNT_RANGE,
      "Unknown query parameter 'foo'",
    ),
  },
  handler: (deps: ApiDeps) => async (req: Request, res: Response) => {
    const query = parseInput(CronPreviewQuerySchema, singleValuedQuery(req.query, PARAMETERS));
    const { expression, kind } = query.expression;
    const timezone = query.timezone ?? DEFAULT_TIMEZONE;
    const neverFires = kind === "neverFires";
    const times = neverFires
      ? []
      : nextCronRuns(expression, timezone, deps.clock.now(), query.count ?? DEFAULT_PREVIEW_COUNT);
    // `0 0 31 4,6 *` parses and never matches: no time at all is the same finding.
    res.json({
      expression,
      timezone,
      times: times.map((time) => time.toISOString()),
      neverFires: neverFires || times.length === 0,
    });
  },
});
