import type { Config } from "@punctual/core";

/**
 * The effective delivery policy (contract §10.1) an event or cron job answer shows when neither it
 * nor its organization set one: the deployment's defaults.
 */
export function defaultEffectivePolicy(config: Pick<Config, "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS">) {
  return {
    method: "POST",
    headers: {},
    body: "envelope",
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    retry: { delaysMs: [...config.RETRY_DELAYS_MS], maxAgeMs: null, stopOnStatus: [] },
  };
}

/** A policy refusal: the fields that cause it and the sentence answered (contract §10.1). */
export interface PolicyRefusal {
  message: string;
  fields: Record<string, unknown>;
}

const exponential = { attempts: 3, backoff: "exponential", initialDelayMs: 1000, maxDelayMs: 8000 };

/**
 * One request per sentence a policy field is refused with, in the order the API documents them
 * (services/api/src/delivery-policy/schemas.ts `POLICY_REFUSALS`): header sentences name X-Trace.
 */
export const POLICY_REFUSAL_CASES: readonly PolicyRefusal[] = [
  { message: "'method' must be one of POST, PUT, PATCH, GET, DELETE", fields: { method: "HEAD" } },
  { message: "'body' must be 'envelope' or 'raw'", fields: { body: "json" } },
  { message: "'timeoutMs' must be an integer from 1000 to 60000", fields: { timeoutMs: 999 } },
  { message: "'headers' must be an object of header names to string values", fields: { headers: ["X-Trace: 1"] } },
  {
    message: "'headers' must have at most 20 headers",
    fields: { headers: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H-${i}`, "v"])) },
  },
  {
    message: "'headers' must be at most 4096 bytes of names and values in all",
    fields: { headers: { "X-Big": "a".repeat(4092) } },
  },
  { message: "'headers' must not have an empty header name", fields: { headers: { "": "x" } } },
  {
    message: "Header name 'X Trace' is not valid: use only letters, digits and !#$%&'*+-.^_`|~",
    fields: { headers: { "X Trace": "1" } },
  },
  { message: "Header 'Host' cannot be set", fields: { headers: { Host: "example.org" } } },
  {
    message: "Headers 'X-Trace' and 'x-trace' are the same header: header names are case-insensitive",
    fields: { headers: { "X-Trace": "1", "x-trace": "2" } },
  },
  { message: "Header 'X-Trace' must have a string value", fields: { headers: { "X-Trace": 1 } } },
  {
    message: "Header 'X-Trace' must not contain CR, LF or NUL characters in its value",
    fields: { headers: { "X-Trace": "a\r\nX-Evil: 1" } },
  },
  {
    message: "Header 'X-Trace' may contain only tabs, spaces, printable ASCII and Latin-1 characters in its value",
    fields: { headers: { "X-Trace": "emoji 🙂" } },
  },
  {
    message:
      "Header 'Authorization' has the value \"[redacted]\": send its real value (sensitive values are never answered)",
    fields: { headers: { Authorization: "[redacted]" } },
  },
  {
    message: "'retry' must be an object with either 'delaysMs' or 'attempts' and 'backoff'",
    fields: { retry: { maxAgeMs: 1000 } },
  },
  {
    message: "'retry' must have either 'delaysMs' or 'attempts' with 'backoff', not both",
    fields: { retry: { ...exponential, delaysMs: [1000] } },
  },
  { message: "Unknown field 'retry.delays'", fields: { retry: { delaysMs: [], delays: [] } } },
  { message: "'retry.delaysMs' must be a list of at most 20 delays", fields: { retry: { delaysMs: 1000 } } },
  {
    message: "'retry.delaysMs' must hold integers from 100 to 86400000 (milliseconds)",
    fields: { retry: { delaysMs: [1000, 99] } },
  },
  { message: "'retry.attempts' must be an integer from 0 to 20", fields: { retry: { ...exponential, attempts: 21 } } },
  { message: "'retry.backoff' must be 'exponential'", fields: { retry: { ...exponential, backoff: "linear" } } },
  {
    message: "'retry.initialDelayMs' must be an integer from 100 to 86400000 (milliseconds)",
    fields: { retry: { ...exponential, initialDelayMs: 99 } },
  },
  {
    message: "'retry.maxDelayMs' must be an integer from 100 to 86400000 (milliseconds)",
    fields: { retry: { ...exponential, maxDelayMs: 86_400_001 } },
  },
  {
    message: "'retry.maxDelayMs' must be at least 'retry.initialDelayMs'",
    fields: { retry: { ...exponential, initialDelayMs: 5000, maxDelayMs: 4999 } },
  },
  { message: "'retry.jitter' must be true or false", fields: { retry: { ...exponential, jitter: "yes" } } },
  {
    message: "'retry.maxAgeMs' must be an integer from 1 to 2592000000 (30 days, in milliseconds)",
    fields: { retry: { delaysMs: [], maxAgeMs: 0 } },
  },
  {
    message: "'retry.stopOnStatus' must be a list of distinct status codes from 400 to 499",
    fields: { retry: { delaysMs: [], stopOnStatus: [404, 500] } },
  },
];

/** The raw-body refusal: a raw body typed JSON whose payload is not JSON. */
export const RAW_PAYLOAD_REFUSAL: PolicyRefusal = {
  message: "'payload' must be valid JSON when 'body' is 'raw' and Content-Type is application/json",
  fields: { payload: "not json", body: "raw", headers: { "Content-Type": "application/json" } },
};
