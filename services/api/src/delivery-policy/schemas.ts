import {
  BODY_MODES,
  BODY_ONE_OF,
  DELIVERY_METHODS,
  duplicateHeader,
  EMPTY_HEADER_NAME,
  HEADERS_OBJECT,
  HEADERS_TOO_LARGE,
  headerCannotBeSet,
  headerValueCharacters,
  headerValueLineBreak,
  headerValueNotString,
  headerValueRedacted,
  invalidHeaderName,
  METHOD_ONE_OF,
  RAW_PAYLOAD_NOT_JSON,
  REDACTED,
  RETRY_ATTEMPTS_RANGE,
  RETRY_BACKOFF,
  RETRY_BOTH_FORMS,
  RETRY_DELAY_RANGE,
  RETRY_DELAYS_LIST,
  RETRY_INITIAL_DELAY_RANGE,
  RETRY_JITTER,
  RETRY_MAX_AGE_RANGE,
  RETRY_MAX_BELOW_INITIAL,
  RETRY_MAX_DELAY_RANGE,
  RETRY_OBJECT,
  RETRY_STOP_ON_STATUS,
  TIMEOUT_RANGE,
  TOO_MANY_HEADERS,
  unknownRetryField,
} from "@punctual/core";
import { z } from "zod";

// The delivery policy in requests and answers (contract §10.1). Requests take the fields of
// `deliveryPolicyShape` (packages/core): each one optional, refused with its own sentence. Every
// event and cron job answer shows the effective policy: each field filled with the deployment's
// defaults, sensitive header values "[redacted]".

/** The examples of the refusal sentences that take a header name. */
export const EXAMPLE_HEADER = "X-Trace";

/**
 * Every sentence a policy field is refused with, in the order the reference lists them (header
 * sentences with an example name). The raw-body rule is listed apart (`RAW_PAYLOAD_NOT_JSON`): the
 * organization's default has no payload.
 */
export const POLICY_REFUSALS: readonly string[] = [
  METHOD_ONE_OF,
  BODY_ONE_OF,
  TIMEOUT_RANGE,
  HEADERS_OBJECT,
  TOO_MANY_HEADERS,
  HEADERS_TOO_LARGE,
  EMPTY_HEADER_NAME,
  invalidHeaderName("X Trace"),
  headerCannotBeSet("Host"),
  duplicateHeader(EXAMPLE_HEADER, EXAMPLE_HEADER.toLowerCase()),
  headerValueNotString(EXAMPLE_HEADER),
  headerValueLineBreak(EXAMPLE_HEADER),
  headerValueCharacters(EXAMPLE_HEADER),
  headerValueRedacted("Authorization"),
  RETRY_OBJECT,
  RETRY_BOTH_FORMS,
  unknownRetryField("delays"),
  RETRY_DELAYS_LIST,
  RETRY_DELAY_RANGE,
  RETRY_ATTEMPTS_RANGE,
  RETRY_BACKOFF,
  RETRY_INITIAL_DELAY_RANGE,
  RETRY_MAX_DELAY_RANGE,
  RETRY_MAX_BELOW_INITIAL,
  RETRY_JITTER,
  RETRY_MAX_AGE_RANGE,
  RETRY_STOP_ON_STATUS,
];

/** The refusals of a body with a payload: the policy's, then the raw-body rule. */
export const POLICY_REFUSALS_WITH_PAYLOAD: readonly string[] = [...POLICY_REFUSALS, RAW_PAYLOAD_NOT_JSON];

const deadline = z
  .number()
  .int()
  .nullable()
  .meta({ description: "No attempt starts later than scheduledTime + maxAgeMs; null: no deadline" });
const stopOnStatus = z
  .array(z.number().int())
  .meta({ description: "An answer with one of these statuses ends the delivery at once as Failed To Send" });

/** The retry schedule a delivery uses: fixed delays (`RETRY_DELAYS_MS` by default) or exponential. */
export const EffectiveRetrySchema = z
  .union([
    z.object({
      delaysMs: z.array(z.number().int()).meta({ description: "Wait before each retry, in milliseconds" }),
      maxAgeMs: deadline,
      stopOnStatus,
    }),
    z.object({
      attempts: z.number().int().meta({ description: "Retries after the first attempt" }),
      backoff: z.literal("exponential"),
      initialDelayMs: z.number().int(),
      maxDelayMs: z.number().int(),
      jitter: z.boolean(),
      maxAgeMs: deadline,
      stopOnStatus,
    }),
  ])
  .meta({ description: "The retry schedule deliveries use; RETRY_DELAYS_MS when none was set" });

/** The effective policy's fields, as every event and cron job answer carries them. */
export const effectivePolicyShape = {
  method: z.enum(DELIVERY_METHODS).meta({ description: "HTTP method of the delivery (POST by default)" }),
  headers: z.record(z.string(), z.string()).meta({
    description: `Extra request headers; the values of Authorization, Proxy-Authorization, Cookie and of names containing token, secret, key or password are shown as "${REDACTED}"`,
  }),
  body: z.enum(BODY_MODES).meta({ description: "`envelope` (default) or `raw`" }),
  timeoutMs: z.number().int().meta({ description: "One attempt's time limit (DELIVERY_TIMEOUT_MS by default)" }),
  retry: EffectiveRetrySchema,
};

/** The effective policy as a whole (a component of its own, for clients that name its type). */
export const EffectiveDeliveryPolicySchema = z.object(effectivePolicyShape);
