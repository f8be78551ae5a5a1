import {
  ConfigSchema,
  CRON_JOB_STATUSES,
  CRON_RUN_STATUSES,
  checkCronExpression,
  cronNeverFires,
  deliveryPolicyShape,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  isValidTimezone,
  NEXT_EXECUTION_STATUSES,
  normalizeCronExpression,
  refineRawPayload,
} from "@punctual/core";
import { z } from "zod";
import { effectivePolicyShape } from "../delivery-policy/schemas.ts";
import { destinationSchema, hasPolicyEdit, payloadSchema, policyEditShape } from "../events/schemas.ts";
import { flowKeyAnswer, flowKeyEditField, flowKeyField } from "../flows/schemas.ts";

// Request and response schemas of the cron jobs API (contract §4). `payload` and `destination`
// are the events API's own validators, so both APIs refuse the same input with the same words. As
// for events, `cronJobRequestSchemas` closes over the deployment's payload limit and destination
// rule; the exported `XxxSchema` constants are the same schemas with the defaults, for
// documentation and tests.

export const DEFAULT_TIMEZONE = "UTC";
export const STATUS_ONE_OF = `'status' must be one of ${CRON_JOB_STATUSES.map((s) => `'${s}'`).join(" or ")}`;
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
  "Five space-separated fields: minute hour day-of-month month day-of-week (ranges, lists, steps, names)",
).transform(normalizeCronExpression);

const timezone = checkedText(
  "timezone",
  INVALID_TIMEZONE,
  (text) => (isValidTimezone(text) ? undefined : INVALID_TIMEZONE),
  `IANA time zone the expression is evaluated in; ${DEFAULT_TIMEZONE} when omitted`,
);

const status = z
  .enum(CRON_JOB_STATUSES, { error: STATUS_ONE_OF })
  .meta({ description: "'Disabled' stops the runs at once; 'Active' resumes them from the next matching time" });

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
      expression,
      timezone: timezone.optional().transform((zone) => zone ?? DEFAULT_TIMEZONE),
      ...deliveryPolicyShape,
      flowKey: flowKeyField.optional(),
    })
    .superRefine(refineRawPayload);

  const UpdateCronJobSchema = z
    .strictObject({
      payload: payload.optional(),
      destination: destination.optional(),
      expression: expression.optional(),
      timezone: timezone.optional(),
      status: status.optional(),
      ...policyEditShape,
      flowKey: flowKeyEditField,
    })
    .refine(
      (changes) =>
        changes.payload !== undefined ||
        changes.destination !== undefined ||
        changes.expression !== undefined ||
        changes.timezone !== undefined ||
        changes.status !== undefined ||
        changes.flowKey !== undefined ||
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
    cron: z.string().meta({ description: "The expression this run was scheduled by" }),
    scheduledFor: z.string().meta({ format: "date-time" }),
    status: z.enum(CRON_RUN_STATUSES),
    attempts: z.number().int(),
    responseStatus: z.number().int().nullable(),
    responseData: z.string().nullable().meta({ description: "The first 1024 bytes of the response body" }),
    requestData: z.string().meta({ description: "The delivered payload" }),
    error: z.string().nullable(),
    durationMs: z.number().int().nullable(),
    createdAt: z.string().meta({ format: "date-time" }),
    updatedAt: z.string().meta({ format: "date-time" }),
  })
  .meta({ id: "CronRun" });
export type CronRun = z.infer<typeof CronRunSchema>;

/** The cron job record of every response (contract §4); the list leaves `history` out. */
export const CronJobSchema = z
  .object({
    id: z.string(),
    createdAt: z.string().meta({ format: "date-time" }),
    updatedAt: z.string().meta({ format: "date-time" }),
    status: z.enum(CRON_JOB_STATUSES),
    nextExecutionStatus: z
      .enum(NEXT_EXECUTION_STATUSES)
      .meta({ description: "'Queued' while a run is being delivered; 'Disabled' while the job is Disabled" }),
    expression: z.string(),
    nextExecutionDate: z
      .string()
      .optional()
      .meta({ format: "date-time", description: "The next run; absent while Disabled" }),
    destination: z.string(),
    org: z.string(),
    payload: z.string(),
    timezone: z.string(),
    flowKey: flowKeyAnswer,
    ...effectivePolicyShape,
  })
  .meta({ id: "CronJob" });
export type CronJob = z.infer<typeof CronJobSchema>;

export const CronJobWithHistorySchema = CronJobSchema.extend({ history: z.array(CronRunSchema) }).meta({
  id: "CronJobWithHistory",
});
export type CronJobWithHistory = z.infer<typeof CronJobWithHistorySchema>;
