import {
  badRequest,
  type CronJobTiming,
  checkCatchUpWindow,
  checkCronExpression,
  checkJitter,
  checkMaxRuns,
  DEFAULT_CATCH_UP_WINDOW_MS,
  END_AT_NOT_AFTER_START_AT,
  EXPRESSION_OR_EVERY,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  isValidTimezone,
  MAX_CATCH_UP_WINDOW_MS,
  MAX_JITTER_MS,
  MAX_MAX_RUNS,
  MIN_CATCH_UP_WINDOW_MS,
  nextFirings,
  parseInput,
  scheduleOfTiming,
  timingProblem,
} from "@punctual/core";
import type { Request, Response } from "express";
import { z } from "zod";
import type { ApiDeps } from "../api-deps.ts";
import { singleValuedQuery } from "../middleware/single-valued-query.ts";
import { tidy } from "../openapi/json-schema.ts";
import { queryParameters } from "../routing/parameters.ts";
import { defineRoute, errorResponse, type Json } from "../routing/route.ts";
import { DEFAULT_TIMEZONE, TIMING_FIELD_REFUSALS, timingQueryFields } from "./schemas.ts";

/** Where the preview is mounted: a path of its own, apart from `/api/cronjobs/{cronJobId}`. */
export const CRON_PREVIEW_PATH = "/api/cron-jobs";

export const MAX_PREVIEW_COUNT = 20;
const DEFAULT_PREVIEW_COUNT = 5;
export const PREVIEW_COUNT_RANGE = `'count' must be an integer between 1 and ${MAX_PREVIEW_COUNT}`;

/**
 * An integer parameter judged by a body field's rule, with its words: the query's text is read as
 * the number it spells (`3`, `-1`), anything else is handed to the rule as it is (and refused).
 */
function integerParameter(
  check: (value: unknown) => { ok: true; value: number } | { ok: false; message: string },
  json: Record<string, unknown>,
) {
  return z
    .unknown()
    .transform((value, ctx): number => {
      const checked = check(typeof value === "string" && /^-?[0-9]{1,16}$/.test(value) ? Number(value) : value);
      if (checked.ok) return checked.value;
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    })
    .meta(json);
}

/**
 * GET /api/cron-jobs/preview query: the timing fields of a cron job (contract §10.4), each judged as
 * cron job create judges it, with the same words, except that a timing that never fires (an
 * expression no date matches, a window already over or without a firing) is answered (`neverFires`)
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
    .optional()
    .meta({
      description:
        "Five space-separated fields: minute hour day-of-month month day-of-week, or six with seconds first. " +
        "Exactly one of `expression` and `every`",
    }),
  every: timingQueryFields.every.optional(),
  timezone: z
    .string()
    .refine(isValidTimezone, { message: INVALID_TIMEZONE })
    .optional()
    .meta({ description: `IANA time zone the expression is evaluated in; ${DEFAULT_TIMEZONE} when omitted` }),
  startAt: timingQueryFields.startAt.optional(),
  endAt: timingQueryFields.endAt.optional(),
  maxRuns: integerParameter(checkMaxRuns, {
    type: "integer",
    minimum: 1,
    maximum: MAX_MAX_RUNS,
    description: "At most this many runs: the firings after the last are listed with `run: null`",
  }).optional(),
  catchUp: timingQueryFields.catchUp.optional(),
  catchUpWindowMs: integerParameter(checkCatchUpWindow, {
    type: "integer",
    minimum: MIN_CATCH_UP_WINDOW_MS,
    maximum: MAX_CATCH_UP_WINDOW_MS,
    description: "Judged as at create; it changes no firing time",
  }).optional(),
  overlap: timingQueryFields.overlap.optional(),
  jitterMs: integerParameter(checkJitter, {
    type: "integer",
    minimum: 0,
    maximum: MAX_JITTER_MS,
    description: "Each run's send window is its firing time to `jitterMs` ms after it",
  }).optional(),
  count: z
    .string()
    .regex(/^[0-9]{1,2}$/, PREVIEW_COUNT_RANGE)
    .transform(Number)
    .refine((n) => n >= 1 && n <= MAX_PREVIEW_COUNT, { message: PREVIEW_COUNT_RANGE })
    .optional()
    .meta({
      description: `How many firings, 1 to ${MAX_PREVIEW_COUNT}; ${DEFAULT_PREVIEW_COUNT} when omitted`,
    }),
});

const PreviewFiringSchema = z
  .object({
    at: z.string().meta({ format: "date-time", description: "The firing time: the run's `scheduledFor`" }),
    run: z
      .number()
      .int()
      .nullable()
      .meta({ description: "Which run it is (1 for the first); null past `maxRuns`: no run, the job is Completed" }),
    sendFrom: z
      .string()
      .nullable()
      .meta({ format: "date-time", description: "The run is sent at or after this time (its firing); null: no run" }),
    sendUntil: z.string().nullable().meta({
      format: "date-time",
      description: "The run is sent at or before this time (its firing + `jitterMs`); null: no run",
    }),
  })
  .meta({ description: "One firing of the schedule" });

export const CronPreviewSchema = z.strictObject({
  expression: z
    .string()
    .nullable()
    .meta({ description: "The expression as a cron job would store it; null with `every`" }),
  every: z.string().nullable().meta({ description: "The interval as given; null with `expression`" }),
  timezone: z.string(),
  times: z.array(z.string().meta({ format: "date-time" })).meta({
    description:
      "The next times it runs after now, oldest first (UTC): the window applied, at most `maxRuns` of them. " +
      "An interval without `startAt` first runs one interval after now, as a job created now would",
  }),
  neverFires: z.boolean().meta({
    description:
      "True when it never fires: no date matches the expression (e.g. `0 0 30 2 *`), `endAt` has passed, or no " +
      "firing falls before `endAt`; `times` is then empty",
  }),
  firings: z.array(PreviewFiringSchema).meta({
    description: "The next `count` firings of the schedule, each with its run number and its send window (jitter)",
  }),
});

const PARAMETERS = new Set(Object.keys(CronPreviewQuerySchema.shape));
const { $schema: _schema, ...previewJson } = tidy(z.toJSONSchema(CronPreviewSchema, { io: "output" })) as Json;

/** GET /api/cron-jobs/preview: when a cron job with this timing would fire, for the console's editor. */
export const previewCronJobRoute = defineRoute({
  method: "get",
  path: `${CRON_PREVIEW_PATH}/preview`,
  operationId: "previewCronJob",
  summary: "Preview a cron job's next times",
  description:
    "The next times a cron job with this timing (contract §10.4: an expression or an interval, a window, a " +
    "number of runs, a jitter) would fire, computed as the scheduler computes them (daylight saving changes " +
    "included), for a job created now. Creates nothing. Also answers at `/api/cronjobs/preview` and " +
    "`/api/cronJobs/preview`, the collection's spellings.",
  tag: "Cron jobs",
  security: "apiKey",
  parameters: queryParameters(CronPreviewQuerySchema),
  failure: "Unable to preview the cron expression",
  responses: {
    "200": { description: "The next times.", json: previewJson },
    "400": errorResponse(
      "A query parameter is invalid.",
      EXPRESSION_OR_EVERY,
      INVALID_EXPRESSION,
      INVALID_TIMEZONE,
      ...TIMING_FIELD_REFUSALS,
      END_AT_NOT_AFTER_START_AT,
      PREVIEW_COUNT_RANGE,
      "Unknown query parameter 'foo'",
    ),
  },
  handler: (deps: ApiDeps) => async (req: Request, res: Response) => {
    const query = parseInput(CronPreviewQuerySchema, singleValuedQuery(req.query, PARAMETERS));
    if ((query.expression === undefined) === (query.every === undefined)) throw badRequest(EXPRESSION_OR_EVERY);
    const now = deps.clock.now();
    const timing: CronJobTiming = {
      expression: query.expression?.expression ?? null,
      timezone: query.timezone ?? DEFAULT_TIMEZONE,
      every: query.every ?? null,
      startAt: query.startAt ?? null,
      endAt: query.endAt ?? null,
      maxRuns: query.maxRuns ?? null,
      catchUp: query.catchUp ?? "skip",
      catchUpWindowMs: query.catchUpWindowMs ?? DEFAULT_CATCH_UP_WINDOW_MS,
      overlap: query.overlap ?? "allow",
      jitterMs: query.jitterMs ?? 0,
    };
    // Judged for a job created now; what never fires is answered, what contradicts itself refused.
    const problem = timingProblem(timing, now, now);
    if (problem?.kind === "refused") throw badRequest(problem.message);
    const firings =
      problem !== undefined || query.expression?.kind === "neverFires"
        ? []
        : nextFirings(scheduleOfTiming(timing, now), now.getTime(), query.count ?? DEFAULT_PREVIEW_COUNT);
    const iso = (millis: number) => new Date(millis).toISOString();
    const listed = firings.map((at, index) => {
      const run = timing.maxRuns === null || index < timing.maxRuns ? index + 1 : null;
      return {
        at: iso(at),
        run,
        sendFrom: run === null ? null : iso(at),
        sendUntil: run === null ? null : iso(at + timing.jitterMs),
      };
    });
    // `0 0 31 4,6 *` parses and never matches: no time at all is the same finding.
    res.json({
      expression: timing.expression,
      every: timing.every?.text ?? null,
      timezone: timing.timezone,
      times: listed.filter((firing) => firing.run !== null).map((firing) => firing.at),
      neverFires: firings.length === 0,
      firings: listed,
    });
  },
});
