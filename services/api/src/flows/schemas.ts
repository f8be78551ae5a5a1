import {
  badRequest,
  DEFAULT_FLOW_PERIOD_MS,
  FLOW_KEY_INVALID,
  FLOW_PARALLELISM_RANGE,
  FLOW_PERIOD_RANGE,
  FLOW_RATE_RANGE,
  type FlowRecord,
  isFlowKey,
  MAX_FLOW_KEY_LENGTH,
  MAX_FLOW_PARALLELISM,
  MAX_FLOW_PERIOD_MS,
  MAX_FLOW_RATE,
  MIN_FLOW_PARALLELISM,
  MIN_FLOW_PERIOD_MS,
  MIN_FLOW_RATE,
} from "@punctual/core";
import type { Request } from "express";
import { z } from "zod";
import { pathParameter } from "../routing/parameters.ts";

// Flows in requests and answers (contract §10.2): the `flowKey` field of events and cron jobs, the
// flow key of the /api/flows paths, the body of PUT /api/flows/{flowKey} and the flow records.
// As for the delivery policy (packages/core/src/delivery-policy/policy-schema.ts), each field is
// read from `unknown` and refused with its own sentence, never zod's generic "must be a number".

const FLOW_KEY_JSON = {
  type: "string",
  minLength: 1,
  maxLength: MAX_FLOW_KEY_LENGTH,
  pattern: "^[A-Za-z0-9._:-]{1,64}$",
};

/** A field read from anything: `check` gives its value, or undefined to refuse it with `message`. */
function checkedField<T>(check: (value: unknown) => T | undefined, message: string, json: Record<string, unknown>) {
  return z
    .unknown()
    .transform((value, ctx): T => {
      const checked = check(value);
      if (checked !== undefined) return checked;
      ctx.addIssue({ code: "custom", message });
      return z.NEVER;
    })
    .meta(json);
}

/**
 * The `flowKey` of event and cron job bodies: the flow their deliveries belong to. The flow needs
 * no record: a flow without one has no limits and is not paused.
 */
export const flowKeyField = checkedField((value) => (isFlowKey(value) ? value : undefined), FLOW_KEY_INVALID, {
  ...FLOW_KEY_JSON,
  description:
    "The flow its deliveries belong to (contract §10.2): 1 to 64 letters, digits, `.`, `_`, `:` or `-`. " +
    "The flow's limits and pause (`PUT /api/flows/{flowKey}`) hold them back; a flow without a record has none",
});

/** In an edit: a new flow key, or null to take the record out of its flow. */
export const flowKeyEditField = flowKeyField.nullable().optional();

/** Every record's `flowKey`: always present, null when in no flow. */
export const flowKeyAnswer = z
  .string()
  .nullable()
  .meta({ description: "The flow its deliveries belong to (contract §10.2); null: none" });

/** The `{flowKey}` of the /api/flows paths. */
export const FLOW_KEY_PARAMETER = pathParameter(
  "flowKey",
  "The flow's key: 1 to 64 letters, digits, `.`, `_`, `:` or `-`",
  z.string().meta(FLOW_KEY_JSON),
);

/** The path's flow key, or 400 with the flow key sentence. */
export function flowKeyOfPath(req: Request): string {
  const flowKey = req.params.flowKey;
  if (!isFlowKey(flowKey)) throw badRequest(FLOW_KEY_INVALID);
  return flowKey;
}

const integerIn = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;

/** A limit: an integer in its range, or null (no such limit). */
const limit = (min: number, max: number, message: string, description: string) =>
  checkedField<number | null>((value) => (value === null || integerIn(value, min, max) ? value : undefined), message, {
    type: ["integer", "null"],
    minimum: min,
    maximum: max,
    description,
  }).optional();

/** PUT /api/flows/{flowKey}: the flow's limits, replaced as a whole. */
export const SetFlowSchema = z
  .strictObject({
    rate: limit(
      MIN_FLOW_RATE,
      MAX_FLOW_RATE,
      FLOW_RATE_RANGE,
      "At most this many attempts of the flow start in any window of `periodMs`; null or absent: no rate limit",
    ),
    periodMs: checkedField(
      (value) => (integerIn(value, MIN_FLOW_PERIOD_MS, MAX_FLOW_PERIOD_MS) ? value : undefined),
      FLOW_PERIOD_RANGE,
      {
        type: "integer",
        minimum: MIN_FLOW_PERIOD_MS,
        maximum: MAX_FLOW_PERIOD_MS,
        description: `The window of \`rate\`, in milliseconds; ${DEFAULT_FLOW_PERIOD_MS} when absent`,
      },
    ).optional(),
    parallelism: limit(
      MIN_FLOW_PARALLELISM,
      MAX_FLOW_PARALLELISM,
      FLOW_PARALLELISM_RANGE,
      "At most this many attempts of the flow in flight at once; null or absent: no parallelism limit",
    ),
  })
  .meta({ id: "SetFlowRequest", description: "PUT /api/flows/{flowKey}: the limits, replaced as a whole" });

/** POST /api/flows/{flowKey}/pause and /resume take no field; the body may be left out. */
export const PauseFlowSchema = z.strictObject({}).meta({ id: "PauseFlowRequest", description: "No field" });
export const ResumeFlowSchema = z.strictObject({}).meta({ id: "ResumeFlowRequest", description: "No field" });

const timestamp = () => z.string().meta({ format: "date-time" });

const flowShape = {
  flowKey: z.string(),
  rate: z
    .number()
    .int()
    .nullable()
    .meta({ description: "Attempts that may start in any window of `periodMs`; null: no rate limit" }),
  periodMs: z.number().int().meta({ description: "The window of `rate`, in milliseconds" }),
  parallelism: z
    .number()
    .int()
    .nullable()
    .meta({ description: "Attempts that may be in flight at once; null: no parallelism limit" }),
  paused: z.boolean().meta({ description: "While true, no attempt of the flow starts: its deliveries wait" }),
  createdAt: timestamp(),
  updatedAt: timestamp(),
};

/** A flow's record (list, PUT, pause, resume). */
export const FlowSchema = z.object(flowShape).meta({ id: "Flow" });
export type Flow = z.infer<typeof FlowSchema>;

/** A flow's record with what it holds back now (GET /api/flows/{flowKey}). */
export const FlowWithCountsSchema = z
  .object({
    ...flowShape,
    waiting: z
      .number()
      .int()
      .meta({
        description:
          "Due deliveries of the flow that the workers hold back now (the flow is paused or at a limit, or their " +
          "destination is Unhealthy), summed over every worker; deliveries not yet due are not counted",
      }),
    inFlight: z.number().int().meta({ description: "Attempts of the flow started and not answered yet" }),
    oldestWaitingSince: timestamp()
      .nullable()
      .meta({ description: "When the longest-waiting of them was due; null when none waits" }),
  })
  .meta({ id: "FlowWithCounts" });
export type FlowWithCounts = z.infer<typeof FlowWithCountsSchema>;

export function toFlow(record: FlowRecord): Flow {
  return {
    flowKey: record.flowKey,
    rate: record.rate,
    periodMs: record.periodMs,
    parallelism: record.parallelism,
    paused: record.paused,
    createdAt: record.createdAt.toISOString(),
    updatedAt: record.updatedAt.toISOString(),
  };
}

/** An instant in milliseconds as an answer shows it, null when there is none. */
export const isoOrNull = (ms: number | undefined): string | null =>
  ms === undefined ? null : new Date(ms).toISOString();
