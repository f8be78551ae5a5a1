import { z } from "zod";
import {
  BODY_MODES,
  type BodyMode,
  DELIVERY_METHODS,
  type DeliveryMethod,
  type DeliveryPolicy,
  type ExponentialRetryPolicy,
  type FixedRetryPolicy,
  headerValue,
  type RetryPolicy,
} from "./policy.ts";
import { isSensitiveHeaderName, REDACTED } from "./redaction.ts";
import { isJsonContentType, mediaTypeOf, parsesAsJson } from "./request-body.ts";

// Request schemas of the delivery policy fields (contract §10.1), shared by the create and edit
// bodies of events and cron jobs and by PUT /api/delivery-policy. Every field is read from
// `unknown` and refused with its own sentence, never zod's generic "must be a number" (the
// pattern of the cron jobs' `checkedText`); `.meta` gives the OpenAPI document the field's type.

// ---------------------------------------------------------------------------------------------
// Limits

export const MAX_POLICY_HEADERS = 20;
/** Names and values together, as sent (each character allowed in a header is one byte on the wire). */
export const MAX_POLICY_HEADER_BYTES = 4096;
export const MIN_TIMEOUT_MS = 1_000;
export const MAX_TIMEOUT_MS = 60_000;
export const MAX_RETRIES = 20;
export const MIN_RETRY_DELAY_MS = 100;
/** 24 hours. */
export const MAX_RETRY_DELAY_MS = 86_400_000;
/** 30 days: a delivery's retries end at most this long after its scheduled time. */
export const MAX_MAX_AGE_MS = 2_592_000_000;

/**
 * Headers a client cannot set (compared case-insensitively): those the transport or the signature
 * owns, and those undici refuses to send (Keep-Alive, Upgrade, Expect: every attempt would fail).
 */
export const RESERVED_HEADER_NAMES: readonly string[] = [
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "user-agent",
  "keep-alive",
  "upgrade",
  "expect",
];
/** Prefixes of the signature headers (contract §5), compared case-insensitively. */
export const RESERVED_HEADER_PREFIXES: readonly string[] = ["x-jiter-", "webhook-"];

// ---------------------------------------------------------------------------------------------
// Sentences

const list = (items: readonly string[]) => items.join(", ");

export const METHOD_ONE_OF = `'method' must be one of ${list(DELIVERY_METHODS)}`;
export const BODY_ONE_OF = "'body' must be 'envelope' or 'raw'";
export const TIMEOUT_RANGE = `'timeoutMs' must be an integer from ${MIN_TIMEOUT_MS} to ${MAX_TIMEOUT_MS}`;

export const HEADERS_OBJECT = "'headers' must be an object of header names to string values";
export const TOO_MANY_HEADERS = `'headers' must have at most ${MAX_POLICY_HEADERS} headers`;
export const HEADERS_TOO_LARGE = `'headers' must be at most ${MAX_POLICY_HEADER_BYTES} bytes of names and values in all`;
export const EMPTY_HEADER_NAME = "'headers' must not have an empty header name";
export const invalidHeaderName = (name: string) =>
  `Header name '${name}' is not valid: use only letters, digits and !#$%&'*+-.^_\`|~`;
export const headerCannotBeSet = (name: string) => `Header '${name}' cannot be set`;
export const duplicateHeader = (first: string, second: string) =>
  `Headers '${first}' and '${second}' are the same header: header names are case-insensitive`;
export const headerValueNotString = (name: string) => `Header '${name}' must have a string value`;
export const headerValueLineBreak = (name: string) =>
  `Header '${name}' must not contain CR, LF or NUL characters in its value`;
export const headerValueCharacters = (name: string) =>
  `Header '${name}' may contain only tabs, spaces, printable ASCII and Latin-1 characters in its value`;

export const RETRY_OBJECT = "'retry' must be an object with either 'delaysMs' or 'attempts' and 'backoff'";
export const RETRY_BOTH_FORMS = "'retry' must have either 'delaysMs' or 'attempts' with 'backoff', not both";
export const unknownRetryField = (key: string) => `Unknown field 'retry.${key}'`;
export const RETRY_DELAYS_LIST = `'retry.delaysMs' must be a list of at most ${MAX_RETRIES} delays`;
export const RETRY_DELAY_RANGE = `'retry.delaysMs' must hold integers from ${MIN_RETRY_DELAY_MS} to ${MAX_RETRY_DELAY_MS} (milliseconds)`;
export const RETRY_ATTEMPTS_RANGE = `'retry.attempts' must be an integer from 0 to ${MAX_RETRIES}`;
export const RETRY_BACKOFF = "'retry.backoff' must be 'exponential'";
export const RETRY_INITIAL_DELAY_RANGE = `'retry.initialDelayMs' must be an integer from ${MIN_RETRY_DELAY_MS} to ${MAX_RETRY_DELAY_MS} (milliseconds)`;
export const RETRY_MAX_DELAY_RANGE = `'retry.maxDelayMs' must be an integer from ${MIN_RETRY_DELAY_MS} to ${MAX_RETRY_DELAY_MS} (milliseconds)`;
export const RETRY_MAX_BELOW_INITIAL = "'retry.maxDelayMs' must be at least 'retry.initialDelayMs'";
export const RETRY_JITTER = "'retry.jitter' must be true or false";
export const RETRY_MAX_AGE_RANGE = `'retry.maxAgeMs' must be an integer from 1 to ${MAX_MAX_AGE_MS} (30 days, in milliseconds)`;
export const RETRY_STOP_ON_STATUS = "'retry.stopOnStatus' must be a list of distinct status codes from 400 to 499";

/** The refusal of a raw body that is not JSON while its Content-Type says it is. */
export const rawPayloadNotJson = (mediaType = "application/json") =>
  `'payload' must be valid JSON when 'body' is 'raw' and Content-Type is ${mediaType}`;
export const RAW_PAYLOAD_NOT_JSON = rawPayloadNotJson();

// ---------------------------------------------------------------------------------------------
// Rules, as plain functions: each gives the value or the sentence refusing it.

type Checked<T> = { ok: true; value: T } | { ok: false; message: string };
const accept = <T>(value: T): Checked<T> => ({ ok: true, value });
const refuse = (message: string): Checked<never> => ({ ok: false, message });

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const integerIn = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;

/** RFC 9110 token: one or more tchar. */
const HTTP_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const LINE_BREAK_OR_NUL = /[\r\n\0]/;
/** What an HTTP field value may hold (RFC 9110 field-vchar, SP, HTAB, obs-text), as undici checks it. */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export function checkMethod(value: unknown): Checked<DeliveryMethod> {
  const method = DELIVERY_METHODS.find((candidate) => candidate === value);
  return method === undefined ? refuse(METHOD_ONE_OF) : accept(method);
}

export function checkBodyMode(value: unknown): Checked<BodyMode> {
  const mode = BODY_MODES.find((candidate) => candidate === value);
  return mode === undefined ? refuse(BODY_ONE_OF) : accept(mode);
}

export function checkTimeout(value: unknown): Checked<number> {
  return integerIn(value, MIN_TIMEOUT_MS, MAX_TIMEOUT_MS) ? accept(value) : refuse(TIMEOUT_RANGE);
}

/** Whether a client may set header `name` (case-insensitive). */
export function isReservedHeaderName(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADER_NAMES.includes(lower) || RESERVED_HEADER_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

/** The problem with one header, or undefined. */
function headerProblem(name: string, value: unknown): string | undefined {
  if (name === "") return EMPTY_HEADER_NAME;
  if (!HTTP_TOKEN.test(name)) return invalidHeaderName(name);
  if (isReservedHeaderName(name)) return headerCannotBeSet(name);
  if (typeof value !== "string") return headerValueNotString(name);
  if (LINE_BREAK_OR_NUL.test(value)) return headerValueLineBreak(name);
  if (!HEADER_VALUE.test(value)) return headerValueCharacters(name);
  // What a GET answered for a sensitive value, written back unchanged (a read-modify-write): the
  // real value would be lost for the placeholder.
  if (value === REDACTED && isSensitiveHeaderName(name)) return headerValueRedacted(name);
  return undefined;
}

/** The refusal of a sensitive header whose value is the placeholder answers show. */
export const headerValueRedacted = (name: string) =>
  `Header '${name}' has the value "${REDACTED}": send its real value (sensitive values are never answered)`;

/** The `headers` field: names and values kept exactly as given. */
export function checkHeaders(value: unknown): Checked<Record<string, string>> {
  if (!isRecord(value)) return refuse(HEADERS_OBJECT);
  const entries = Object.entries(value);
  if (entries.length > MAX_POLICY_HEADERS) return refuse(TOO_MANY_HEADERS);
  const seen = new Map<string, string>();
  let bytes = 0;
  for (const [name, headerValue] of entries) {
    const problem = headerProblem(name, headerValue);
    if (problem !== undefined) return refuse(problem);
    const first = seen.get(name.toLowerCase());
    if (first !== undefined) return refuse(duplicateHeader(first, name));
    seen.set(name.toLowerCase(), name);
    bytes += name.length + (headerValue as string).length;
  }
  if (bytes > MAX_POLICY_HEADER_BYTES) return refuse(HEADERS_TOO_LARGE);
  return accept(Object.fromEntries(entries) as Record<string, string>);
}

const FIXED_KEYS = ["delaysMs"];
const EXPONENTIAL_KEYS = ["attempts", "backoff", "initialDelayMs", "maxDelayMs", "jitter"];
const LIMIT_KEYS = ["maxAgeMs", "stopOnStatus"];
const RETRY_KEYS = new Set([...FIXED_KEYS, ...EXPONENTIAL_KEYS, ...LIMIT_KEYS]);

/** `maxAgeMs` and `stopOnStatus`, shared by both forms; only the fields given are kept. */
function checkRetryLimits(retry: Record<string, unknown>): Checked<{ maxAgeMs?: number; stopOnStatus?: number[] }> {
  const limits: { maxAgeMs?: number; stopOnStatus?: number[] } = {};
  if (retry.maxAgeMs !== undefined) {
    if (!integerIn(retry.maxAgeMs, 1, MAX_MAX_AGE_MS)) return refuse(RETRY_MAX_AGE_RANGE);
    limits.maxAgeMs = retry.maxAgeMs;
  }
  if (retry.stopOnStatus !== undefined) {
    const codes = retry.stopOnStatus;
    if (
      !Array.isArray(codes) ||
      !codes.every((code) => integerIn(code, 400, 499)) ||
      new Set(codes).size !== codes.length
    ) {
      return refuse(RETRY_STOP_ON_STATUS);
    }
    limits.stopOnStatus = [...codes] as number[];
  }
  return accept(limits);
}

function checkFixedRetry(retry: Record<string, unknown>): Checked<FixedRetryPolicy> {
  const delays = retry.delaysMs;
  if (!Array.isArray(delays) || delays.length > MAX_RETRIES) return refuse(RETRY_DELAYS_LIST);
  if (!delays.every((delay) => integerIn(delay, MIN_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS))) {
    return refuse(RETRY_DELAY_RANGE);
  }
  const limits = checkRetryLimits(retry);
  if (!limits.ok) return limits;
  return accept({ delaysMs: [...delays] as number[], ...limits.value });
}

function checkExponentialRetry(retry: Record<string, unknown>): Checked<ExponentialRetryPolicy> {
  const { attempts, backoff, initialDelayMs, maxDelayMs, jitter } = retry;
  if (!integerIn(attempts, 0, MAX_RETRIES)) return refuse(RETRY_ATTEMPTS_RANGE);
  if (backoff !== "exponential") return refuse(RETRY_BACKOFF);
  if (!integerIn(initialDelayMs, MIN_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS)) return refuse(RETRY_INITIAL_DELAY_RANGE);
  if (!integerIn(maxDelayMs, MIN_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS)) return refuse(RETRY_MAX_DELAY_RANGE);
  if (maxDelayMs < initialDelayMs) return refuse(RETRY_MAX_BELOW_INITIAL);
  if (jitter !== undefined && typeof jitter !== "boolean") return refuse(RETRY_JITTER);
  const limits = checkRetryLimits(retry);
  if (!limits.ok) return limits;
  return accept({
    attempts,
    backoff,
    initialDelayMs,
    maxDelayMs,
    ...(jitter === undefined ? {} : { jitter }),
    ...limits.value,
  });
}

/**
 * The `retry` field: a fixed schedule (`delaysMs`) or an exponential one (`attempts`, `backoff`,
 * `initialDelayMs`, `maxDelayMs`, `jitter`), exactly one of them, plus `maxAgeMs` and `stopOnStatus`.
 */
export function checkRetry(value: unknown): Checked<RetryPolicy> {
  if (!isRecord(value)) return refuse(RETRY_OBJECT);
  const keys = Object.keys(value);
  const unknown = keys.find((key) => !RETRY_KEYS.has(key));
  if (unknown !== undefined) return refuse(unknownRetryField(unknown));
  const fixed = keys.some((key) => FIXED_KEYS.includes(key));
  const exponential = keys.some((key) => EXPONENTIAL_KEYS.includes(key));
  if (fixed && exponential) return refuse(RETRY_BOTH_FORMS);
  if (fixed) return checkFixedRetry(value);
  if (exponential) return checkExponentialRetry(value);
  return refuse(RETRY_OBJECT);
}

/**
 * The sentence refusing a raw body that cannot be sent as its Content-Type says, or undefined.
 * With `body: "raw"` and a Content-Type header (case-insensitive) whose media type is JSON
 * (`application/json` or any `…+json`), the payload must parse as JSON. Without that header the
 * Content-Type follows the payload (request-body.ts), so nothing can disagree. The API calls it
 * with the effective values: the body's own fields, else the stored ones, else the organization's
 * default (a GET or DELETE sends no body, but the rule does not depend on the method).
 */
export function rawPayloadProblem(
  payload: string,
  policy: Pick<DeliveryPolicy, "body" | "headers"> | null | undefined,
): string | undefined {
  if (policy?.body !== "raw") return undefined;
  const contentType = headerValue(policy.headers, "content-type");
  if (contentType === undefined || !isJsonContentType(contentType)) return undefined;
  return parsesAsJson(payload) ? undefined : rawPayloadNotJson(mediaTypeOf(contentType));
}

// ---------------------------------------------------------------------------------------------
// zod schemas

/** A field read from anything, refused with its rule's own sentence; `json` documents its type. */
function checkedField<T>(check: (value: unknown) => Checked<T>, json: Record<string, unknown>) {
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

const delayJson = (description: string) => ({
  type: "integer",
  minimum: MIN_RETRY_DELAY_MS,
  maximum: MAX_RETRY_DELAY_MS,
  description,
});
const retryLimitsJson = {
  maxAgeMs: {
    type: "integer",
    minimum: 1,
    maximum: MAX_MAX_AGE_MS,
    description: "No attempt starts later than scheduledTime + maxAgeMs; the delivery then fails",
  },
  stopOnStatus: {
    type: "array",
    items: { type: "integer", minimum: 400, maximum: 499 },
    uniqueItems: true,
    description: "An answer with one of these statuses ends the delivery at once as Failed To Send",
  },
};

/**
 * The policy fields of the create and edit bodies of events and cron jobs, each optional, to
 * spread into their object schemas: `z.strictObject({ payload, destination, ...deliveryPolicyShape })`.
 * A field left out stays out of the parsed value, so what is parsed is what is stored.
 */
export const deliveryPolicyShape = {
  method: checkedField(checkMethod, {
    type: "string",
    enum: [...DELIVERY_METHODS],
    description: "HTTP method of the delivery; POST when absent. GET and DELETE send no body",
  }).optional(),
  headers: checkedField(checkHeaders, {
    type: "object",
    additionalProperties: { type: "string" },
    maxProperties: MAX_POLICY_HEADERS,
    description: `Extra request headers: at most ${MAX_POLICY_HEADERS}, ${MAX_POLICY_HEADER_BYTES} bytes of names and values in all. Host, Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, Expect, User-Agent, X-Jiter-* and webhook-* cannot be set`,
  }).optional(),
  body: checkedField(checkBodyMode, {
    type: "string",
    enum: [...BODY_MODES],
    description:
      "`envelope` (default): the JSON `{payload, scheduledTime}`; `raw`: the payload string itself, sent as its Content-Type header says, else as application/json when it parses as JSON, else as text/plain",
  }).optional(),
  timeoutMs: checkedField(checkTimeout, {
    type: "integer",
    minimum: MIN_TIMEOUT_MS,
    maximum: MAX_TIMEOUT_MS,
    description: "One attempt's time limit; DELIVERY_TIMEOUT_MS when absent",
  }).optional(),
  retry: checkedField(checkRetry, {
    description:
      "Retry schedule, replacing RETRY_DELAYS_MS: fixed delays, or exponential backoff (delay i = min(maxDelayMs, initialDelayMs × 2^i), full jitter when asked)",
    oneOf: [
      {
        type: "object",
        additionalProperties: false,
        required: ["delaysMs"],
        properties: {
          delaysMs: {
            type: "array",
            maxItems: MAX_RETRIES,
            items: delayJson("Wait before each retry"),
          },
          ...retryLimitsJson,
        },
      },
      {
        type: "object",
        additionalProperties: false,
        required: ["attempts", "backoff", "initialDelayMs", "maxDelayMs"],
        properties: {
          attempts: {
            type: "integer",
            minimum: 0,
            maximum: MAX_RETRIES,
            description: "Retries after the first attempt",
          },
          backoff: { type: "string", enum: ["exponential"] },
          initialDelayMs: delayJson("Wait before the first retry"),
          maxDelayMs: delayJson("Longest wait; at least initialDelayMs"),
          jitter: { type: "boolean", default: false },
          ...retryLimitsJson,
        },
      },
    ],
  }).optional(),
};

/**
 * PUT /api/delivery-policy body: the organization's default, the same fields; `{}` clears it.
 * Unknown fields are refused as in every other body.
 */
export const DeliveryPolicySchema = z.strictObject(deliveryPolicyShape);

/** What `DeliveryPolicySchema` (or the spread shape) parses to: the policy as stored. */
export type ParsedDeliveryPolicy = z.output<typeof DeliveryPolicySchema>;

/**
 * A refinement for an object schema holding `payload` and the policy fields: refuses, on
 * `payload`, a raw JSON-typed body that is not JSON. Only sees what the request itself holds; an
 * edit or a create that inherits `body` or `headers` must also call `rawPayloadProblem` with the
 * effective values.
 */
export function refineRawPayload(
  value: { payload?: string | undefined } & Pick<DeliveryPolicy, "body" | "headers">,
  ctx: z.RefinementCtx,
): void {
  if (value.payload === undefined) return;
  const message = rawPayloadProblem(value.payload, value);
  if (message !== undefined) ctx.addIssue({ code: "custom", path: ["payload"], message });
}
