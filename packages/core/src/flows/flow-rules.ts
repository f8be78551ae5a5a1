import { forbidden, notFound } from "../errors.ts";

// What a flow key and a flow's limits may be (contract §10.2), and the sentences refusing the rest.
// Shared by the API (request bodies and paths) and anyone else that names flows; the limits are
// stored in "flows" (flow-records.ts) and enforced in Redis (admission-store.ts).

export const MAX_FLOW_KEY_LENGTH = 64;
/** 1–64 characters of `A-Z a-z 0-9 . _ : -`: safe in a path segment, a Redis key and a log line. */
export const FLOW_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
export const FLOW_KEY_INVALID = "'flowKey' must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-'";

export const MIN_FLOW_RATE = 1;
export const MAX_FLOW_RATE = 10_000;
export const MIN_FLOW_PERIOD_MS = 1_000;
/** 24 hours. */
export const MAX_FLOW_PERIOD_MS = 86_400_000;
export const DEFAULT_FLOW_PERIOD_MS = 1_000;
export const MIN_FLOW_PARALLELISM = 1;
export const MAX_FLOW_PARALLELISM = 1_000;

export const FLOW_RATE_RANGE = `'rate' must be an integer from ${MIN_FLOW_RATE} to ${MAX_FLOW_RATE}, or null for no limit`;
export const FLOW_PERIOD_RANGE = `'periodMs' must be an integer from ${MIN_FLOW_PERIOD_MS} to ${MAX_FLOW_PERIOD_MS} (milliseconds)`;
export const FLOW_PARALLELISM_RANGE = `'parallelism' must be an integer from ${MIN_FLOW_PARALLELISM} to ${MAX_FLOW_PARALLELISM}, or null for no limit`;

/** Whether `value` is a flow key. */
export const isFlowKey = (value: unknown): value is string => typeof value === "string" && FLOW_KEY_PATTERN.test(value);

/** The refusal of one more flow past `MAX_FLOWS_PER_ORG` (403, as the cron job limit). */
export const flowLimitReached = (limit: number) => forbidden(`Flow limit of ${limit} reached for this organization`);

/** The answer about a flow key that has no record in the organization. */
export const flowNotFoundMessage = (flowKey: string) => `No flow '${flowKey}'`;
export const flowNotFound = (flowKey: string) => notFound(flowNotFoundMessage(flowKey));
