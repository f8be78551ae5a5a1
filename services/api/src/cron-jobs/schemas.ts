import {
  CATCH_UP_ONE_OF,
  CATCH_UP_POLICIES,
  CATCH_UP_WINDOW_RANGE,
  ConfigSchema,
  CRON_JOB_STATUSES,
  CRON_RUN_STATUSES,
  checkCatchUp,
  checkCatchUpWindow,
  checkCronExpression,
  checkEvery,
  checkJitter,
  checkMaxRuns,
  checkOverlap,
  cronNeverFires,
  DEFAULT_CATCH_UP_WINDOW_MS,
  deliveryPolicyShape,
  END_AT_NOT_AFTER_START_AT,
  END_AT_PAST,
  EVERY_INVALID,
  EVERY_TOO_LONG,
  EVERY_TOO_SHORT,
  EXPRESSION_OR_EVERY,
  givesBothExpressionAndEvery,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  isValidTimezone,
  JITTER_RANGE,
  MAX_CATCH_UP_WINDOW_MS,
  MAX_EVERY_MS,
  MAX_JITTER_MS,
  MAX_MAX_RUNS,
  MAX_RUNS_RANGE,
  MIN_CATCH_UP_WINDOW_MS,
  MIN_EVERY_MS,
  NEVER_FIRES_BEFORE_END_AT,
  NEXT_EXECUTION_STATUSES,
  normalizeCronExpression,
  OVERLAP_ONE_OF,
  OVERLAP_POLICIES,
  refineRawPayload,
  timeInvalid,
  timeZoneRequired,
} from "@punctual/core";
import { z } from "zod";
import { effectivePolicyShape } from "../delivery-policy/schemas.ts";
import { labelsAnswer, labelsEditField, labelsField } from "../events/label-schemas.ts";
import {
  destinationSchema,
  hasPolicyEdit,
  lacksTimeZone,
  parseZonedTimestamp,
  payloadSchema,
  policyEditShape,
} from "../events/schemas.ts";
import { flowKeyAnswer, flowKeyEditField, flowKeyField } from "../flows/schemas.ts";
import { CallbackStateSchema, callbackUrlAnswer, callbackUrlEditField, callbackUrlField } from "../webhooks/schemas.ts";

// Request and response schemas of the cron jobs API (contract §4, §10.4). `payload` and
// `destination` are the events API's own validators, so both APIs refuse the same input with the
// same words. As for events, `cronJobRequestSchemas` closes over the deployment's payload limit and
// destination rule; the exported `XxxSchema` constants are the same schemas with the defaults, for
// documentation and tests. Each timing field is judged here on its own (schedule-rules.ts in core);
// the timing as a whole (a window that fires) when the job is created or the edit merged.

export const DEFAULT_TIMEZONE = "UTC";
/** What an edit may set: Completed is reached by the job itself (contract §10.4), never set. */
export const EDITABLE_STATUSES = CRON_JOB_STATUSES.filter((status) => status !== "Completed") as ["Active", "Disabled"];
export const STATUS_ONE_OF = `'status' must be one of ${EDITABLE_STATUSES.map((s) => `'${s}'`).join(" or ")}`;
/** The refusals of single timing fields (contract §10.4), as the document lists them. */
export const TIMING_FIELD_REFUSALS = [
  EVERY_INVALID,
  EVERY_TOO_SHORT,
  EVERY_TOO_LONG,
  timeInvalid("startAt"),
  timeZoneRequired("startAt"),
  timeInvalid("endAt"),
  timeZoneRequired("endAt"),
  MAX_RUNS_RANGE,
  CATCH_UP_ONE_OF,
  CATCH_UP_WINDOW_RANGE,
  OVERLAP_ONE_OF,
  JITTER_RANGE,
];
/** The refusals of a timing as a whole: what was given contradicts itself, or never fires. */
export const TIMING_WHOLE_REFUSALS = [
  EXPRESSION_OR_EVERY,
  END_AT_NOT_AFTER_START_AT,
  END_AT_PAST,
  NEVER_FIRES_BEFORE_END_AT,
];
export const AT_LEAST_ONE_CRON_CHANGE =
  "At least one of 'payload', 'destination', 'expression', 'timezone' or 'status' is required";

/**
 * A text field whose errors are the contract's sentences: contract §4 says anything but a valid
 * expression (or zone) gets that sentence, so a number or `null` gets it too, not the generic
 * "must be a string". Only a missing required field is named as missing. `problem` names what is
 * wrong with a string, or nothing when it is fine.
 */
function checkedText(
  field: string,
  invalid: string,
  problem: (text: string) => string | undefined,
  description: string,
) {
  return z
    .unknown()
    .transform((value, ctx) => {
      if (value === undefined) {
        ctx.addIssue({ code: "custom", message: `'${field}' is required` });
        return z.NEVER;
      }
      if (typeof value !== "string") {
        ctx.addIssue({ code: "custom", message: invalid });
        return z.NEVER;
      }
      const message = problem(value);
      if (message !== undefined) {
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      }
      return value;
    })
    .meta({ type: "string", description });
}

/** An expression that never fires is refused with its own sentence, not as bad syntax (judged once). */
const expressionProblem = (text: string) => {
  const check = checkCronExpression(text);
  if (check.kind === "neverFires") return cronNeverFires(check.expression);
  return check.kind === "invalid" ? INVALID_EXPRESSION : undefined;
};

const expression = checkedText(
  "expression",
  INVALID_EXPRESSION,
  expressionProblem,
  "Five space-separated fields: minute hour day-of-month month day-of-week (ranges, lists, steps, names), " +
    "or six with seconds first. Exactly one of `expression` and `every`",
).transform(normalizeCronExpression);

/** A timing field read from anything, refused with its rule's own sentence; `json` documents its type. */
function checkedField<T>(
  check: (value: unknown) => { ok: true; value: T } | { ok: false; message: string },
  json: Record<string, unknown>,
) {
  return z
    .unknown()
    .transform((value, ctx): T => {
      const checked = check(value);
      if (checked.ok) return checked.value;
      ctx.addIssue({ code: "custom", message: checked.message });
      return z.NEVER;
    })
    .meta(json);
}

const every = checkedField(checkEvery, {
  type: "string",
  description:
    `A fixed interval instead of an expression: an ISO 8601 duration of weeks, days, hours, minutes and seconds ` +
    `(\`PT30S\`, \`PT5M\`, \`P1D\` = 24 hours), ${MIN_EVERY_MS / 1000} second to ${MAX_EVERY_MS / 86_400_000} days; ` +
    "months and years are refused. The first run is at `startAt`, else one interval after the job is created " +
    "(or its timing edited, or it is enabled again)",
  examples: ["PT5M"],
});

/** `startAt` and `endAt`: an ISO 8601 time with a zone, as an event's `scheduledTime` is read. */
const zonedTime = (field: "startAt" | "endAt", description: string) =>
  z
    .unknown()
    .transform((value, ctx): Date => {
      const time = typeof value === "string" ? parseZonedTimestamp(value) : undefined;
      if (time) return time;
      const message = typeof value === "string" && lacksTimeZone(value) ? timeZoneRequired(field) : timeInvalid(field);
      ctx.addIssue({ code: "custom", message });
      return z.NEVER;
    })
    .meta({ type: "string", format: "date-time", description });

const startAt = zonedTime(
  "startAt",
  "No run before it (ISO 8601 with a zone); an interval (`every`) runs first at it, then each interval after it",
);
const endAt = zonedTime(
  "endAt",
  "No run after it (ISO 8601 with a zone); after `startAt`, in the future, and the schedule must fire before it. " +
    "Once it has passed the job is `Completed`",
);
const maxRuns = checkedField(checkMaxRuns, {
  type: "integer",
  minimum: 1,
  maximum: MAX_MAX_RUNS,
  description:
    "At most this many runs; after the last the job is `Completed` (final; it no longer counts toward the limit)",
});
const catchUp = checkedField(checkCatchUp, {
  type: "string",
  enum: [...CATCH_UP_POLICIES],
  description:
    "Firings missed while no worker ran: `skip` (default: not delivered), `latest` (the most recent one, once) or " +
    "`all` (each one within `catchUpWindowMs`, at most 100), each a run with its own `scheduledFor`",
});
const catchUpWindowMs = checkedField(checkCatchUpWindow, {
  type: "integer",
  minimum: MIN_CATCH_UP_WINDOW_MS,
  maximum: MAX_CATCH_UP_WINDOW_MS,
  description: `How far back \`catchUp: all\` looks; ${DEFAULT_CATCH_UP_WINDOW_MS} (1 hour) when absent`,
});
const overlap = checkedField(checkOverlap, {
  type: "string",
  enum: [...OVERLAP_POLICIES],
  description:
    "A firing while the previous run is still undecided: `allow` (default: a run of its own), `skip` (recorded as " +
    "a `Skipped` run, not sent) or `buffer` (at most one waits, sent when the previous run ends)",
});
const jitterMs = checkedField(checkJitter, {
  type: "integer",
  minimum: 0,
  maximum: MAX_JITTER_MS,
  description:
    "Each run is sent at its firing time plus 0 to `jitterMs` ms (the same for the same firing); its `scheduledFor` " +
    "stays the firing time. 0 when absent",
});

/** The timing fields of a create, each optional (defaults: no window, no limit, skip, allow, no jitter). */
const timingShape = {
  every: every.optional(),
  startAt: startAt.optional(),
  endAt: endAt.optional(),
  maxRuns: maxRuns.optional(),
  catchUp: catchUp.optional(),
  catchUpWindowMs: catchUpWindowMs.optional(),
  overlap: overlap.optional(),
  jitterMs: jitterMs.optional(),
};

/** The timing fields of an edit: a field given replaces; `null` clears `every`, the window and `maxRuns`. */
const timingEditShape = {
  every: every.nullable().optional(),
  startAt: startAt.nullable().optional(),
  endAt: endAt.nullable().optional(),
  maxRuns: maxRuns.nullable().optional(),
  catchUp: catchUp.optional(),
  catchUpWindowMs: catchUpWindowMs.optional(),
  overlap: overlap.optional(),
  jitterMs: jitterMs.optional(),
};

/** The timing fields as the preview's query reads them (strings), with create's rules and words. */
export const timingQueryFields = { every, startAt, endAt, catchUp, overlap };

const timezone = checkedText(
  "timezone",
  INVALID_TIMEZONE,
  (text) => (isValidTimezone(text) ? undefined : INVALID_TIMEZONE),
  `IANA time zone the expression is evaluated in; ${DEFAULT_TIMEZONE} when omitted`,
);

const status = z.enum(EDITABLE_STATUSES, { error: STATUS_ONE_OF }).meta({
  description:
    "'Disabled' stops the runs at once; 'Active' resumes them from the next matching time. A `Completed` job " +
    "cannot be edited (409)",
});

export interface CronJobRequestLimits {
  /** `MAX_PAYLOAD_BYTES`: the payload's size in UTF-8 bytes. */
  maxPayloadBytes: number;
  /** `ALLOW_PRIVATE_DESTINATIONS`; when false (the default) a literal forbidden address is refused. */
  allowPrivateDestinations?: boolean | undefined;
}

/** The request schemas of the cron jobs API for a deployment's limits. */
export function cronJobRequestSchemas(limits: CronJobRequestLimits) {
  const payload = payloadSchema(limits.maxPayloadBytes);
  const destination = destinationSchema({ allowPrivateDestinations: limits.allowPrivateDestinations });

  const CreateCronJobSchema = z
    .strictObject({
      payload,
      destination,
      expression: expression.optional(),
      timezone: timezone.optional().transform((zone) => zone ?? DEFAULT_TIMEZONE),
      ...timingShape,
      ...deliveryPolicyShape,
      flowKey: flowKeyField.optional(),
      callbackUrl: callbackUrlField(limits.allowPrivateDestinations ?? false),
      labels: labelsField.optional(),
    })
    .superRefine((value, ctx) => {
      // Exactly one of them (contract §10.4).
      if ((value.expression === undefined) === (value.every === undefined)) {
        ctx.addIssue({ code: "custom", message: EXPRESSION_OR_EVERY });
      }
      refineRawPayload(value, ctx);
    });

  const UpdateCronJobSchema = z
    .strictObject({
      payload: payload.optional(),
      destination: destination.optional(),
      // null clears it: the job must then have (or be given) an interval.
      expression: expression.nullable().optional(),
      timezone: timezone.optional(),
      ...timingEditShape,
      status: status.optional(),
      ...policyEditShape,
      flowKey: flowKeyEditField,
      callbackUrl: callbackUrlEditField(limits.allowPrivateDestinations ?? false),
      labels: labelsEditField,
    })
    .superRefine((changes, ctx) => {
      if (givesBothExpressionAndEvery(changes)) ctx.addIssue({ code: "custom", message: EXPRESSION_OR_EVERY });
    })
    .refine(
      (changes) =>
        changes.payload !== undefined ||
        changes.destination !== undefined ||
        changes.expression !== undefined ||
        changes.timezone !== undefined ||
        Object.keys(timingEditShape).some((field) => changes[field as keyof typeof timingEditShape] !== undefined) ||
        changes.status !== undefined ||
        changes.flowKey !== undefined ||
        changes.callbackUrl !== undefined ||
        changes.labels !== undefined ||
        hasPolicyEdit(changes),
      { message: AT_LEAST_ONE_CRON_CHANGE },
    );

  return { CreateCronJobSchema, UpdateCronJobSchema };
}

const defaults = ConfigSchema.parse({});
const documented = cronJobRequestSchemas({ maxPayloadBytes: defaults.MAX_PAYLOAD_BYTES });

// Only these documented copies carry registry ids (ids must stay unique in zod's global registry).

/** POST /api/cronjobs body (default limits). */
export const CreateCronJobSchema = documented.CreateCronJobSchema.meta({
  id: "CreateCronJobRequest",
  description: "POST /api/cronjobs",
});
export type CreateCronJob = z.output<typeof CreateCronJobSchema>;

/** PUT /api/cronjobs/:cronJobId body (default limits). */
export const UpdateCronJobSchema = documented.UpdateCronJobSchema.meta({
  id: "UpdateCronJobRequest",
  description: "PUT /api/cronjobs/:cronJobId; at least one field",
});
export type UpdateCronJob = z.output<typeof UpdateCronJobSchema>;

/** One run of a cron job in `history` (contract §4); newest first, the last `HISTORY_DAYS` days. */
export const CronRunSchema = z
  .object({
    id: z.string(),
    cron: z.string().meta({ description: "The expression (or interval) this run was scheduled by" }),
    scheduledFor: z.string().meta({ format: "date-time", description: "The firing time (jitter not included)" }),
    status: z.enum(CRON_RUN_STATUSES).meta({
      description: "`Skipped`: a firing while the previous run was undecided, with `overlap: skip`; never sent",
    }),
    attempts: z.number().int(),
    responseStatus: z.number().int().nullable(),
    responseData: z.string().nullable().meta({ description: "The first 1024 bytes of the response body" }),
    requestData: z.string().meta({ description: "The delivered payload" }),
    error: z.string().nullable(),
    durationMs: z.number().int().nullable(),
    createdAt: z.string().meta({ format: "date-time" }),
    updatedAt: z.string().meta({ format: "date-time" }),
    callback: CallbackStateSchema.optional().meta({
      description:
        "The callback of its final outcome, once written (a run that ended while its job had a `callbackUrl`)",
    }),
  })
  .meta({ id: "CronRun" });
export type CronRun = z.infer<typeof CronRunSchema>;

/** The cron job record of every response (contract §4); the list leaves `history` out. */
export const CronJobSchema = z
  .object({
    id: z.string(),
    createdAt: z.string().meta({ format: "date-time" }),
    updatedAt: z.string().meta({ format: "date-time" }),
    status: z.enum(CRON_JOB_STATUSES).meta({
      description:
        "`Completed` once its `maxRuns` ran or its `endAt` passed: final, it no longer counts toward the limit",
    }),
    nextExecutionStatus: z.enum(NEXT_EXECUTION_STATUSES).meta({
      description: "'Queued' while a run is being delivered; 'Disabled' or 'Completed' as the job's status",
    }),
    expression: z
      .string()
      .nullable()
      .meta({ description: "Five fields, or six with seconds first; null when the job runs `every` an interval" }),
    nextExecutionDate: z.string().optional().meta({
      format: "date-time",
      description: "The next firing (inside the window); absent while Disabled, once Completed, and after the last one",
    }),
    destination: z.string(),
    org: z.string(),
    payload: z.string(),
    timezone: z.string(),
    every: z
      .string()
      .nullable()
      .meta({ description: "The interval as given (ISO 8601 duration); null when the job has an expression" }),
    startAt: z.string().nullable().meta({ format: "date-time", description: "No run before it; null: none" }),
    endAt: z.string().nullable().meta({ format: "date-time", description: "No run after it; null: none" }),
    maxRuns: z.number().int().nullable().meta({ description: "At most this many runs; null: no limit" }),
    catchUp: z.enum(CATCH_UP_POLICIES).meta({ description: "What happens to firings missed while no worker ran" }),
    catchUpWindowMs: z.number().int().meta({ description: "How far back `catchUp: all` looks" }),
    overlap: z
      .enum(OVERLAP_POLICIES)
      .meta({ description: "What happens to a firing while the previous run is undecided" }),
    jitterMs: z.number().int().meta({ description: "Each run is sent 0 to this many ms after its firing" }),
    flowKey: flowKeyAnswer,
    callbackUrl: callbackUrlAnswer,
    labels: labelsAnswer,
    ...effectivePolicyShape,
  })
  .meta({ id: "CronJob" });
export type CronJob = z.infer<typeof CronJobSchema>;

export const CronJobWithHistorySchema = CronJobSchema.extend({ history: z.array(CronRunSchema) }).meta({
  id: "CronJobWithHistory",
});
export type CronJobWithHistory = z.infer<typeof CronJobWithHistorySchema>;
