import type { Config } from "../config.ts";

// The delivery policy of events and cron jobs (contract §10.1): how a delivery is sent (method,
// headers, body, timeout) and retried. A record stores only what its client or its organization's
// default set (`DeliveryPolicy`); what a delivery actually uses is that, filled with the
// deployment's defaults (`ResolvedDeliveryPolicy`, from `resolvePolicy`).

/** The methods a delivery may use; POST is the default (contract §5). */
export const DELIVERY_METHODS = ["POST", "PUT", "PATCH", "GET", "DELETE"] as const;
export type DeliveryMethod = (typeof DELIVERY_METHODS)[number];

/** Methods sent without a body (their signatures cover the empty string). */
export const BODYLESS_METHODS: readonly DeliveryMethod[] = ["GET", "DELETE"];

/** `envelope`: contract §5's `{"payload":…,"scheduledTime":…}`; `raw`: the payload string itself. */
export const BODY_MODES = ["envelope", "raw"] as const;
export type BodyMode = (typeof BODY_MODES)[number];

/** What both retry forms may add: a deadline and the 4xx answers that end the delivery at once. */
interface RetryLimits {
  /** No attempt starts later than scheduledTime + maxAgeMs. */
  maxAgeMs?: number;
  /** An answer with one of these statuses ends the delivery as Failed To Send. */
  stopOnStatus?: number[];
}

/** A fixed schedule: the wait before retry i is delaysMs[i]; their count is the number of retries. */
export interface FixedRetryPolicy extends RetryLimits {
  delaysMs: number[];
}

/** `attempts` retries after the first attempt; the wait before retry i is min(max, initial × 2^i). */
export interface ExponentialRetryPolicy extends RetryLimits {
  attempts: number;
  backoff: "exponential";
  initialDelayMs: number;
  maxDelayMs: number;
  /** Full jitter: each wait is a uniformly random part of the computed one. Default false. */
  jitter?: boolean;
}

export type RetryPolicy = FixedRetryPolicy | ExponentialRetryPolicy;

/** A policy as stored on a record or as an organization's default: every field optional. */
export interface DeliveryPolicy {
  method?: DeliveryMethod;
  /** Extra request headers, names as the client wrote them, values as given (never redacted here). */
  headers?: Record<string, string>;
  body?: BodyMode;
  timeoutMs?: number;
  /** Replaced as a whole, never merged field by field. */
  retry?: RetryPolicy;
}

export interface ResolvedFixedRetry {
  delaysMs: number[];
  /** null: no deadline. */
  maxAgeMs: number | null;
  stopOnStatus: number[];
}

export interface ResolvedExponentialRetry {
  attempts: number;
  backoff: "exponential";
  initialDelayMs: number;
  maxDelayMs: number;
  jitter: boolean;
  /** null: no deadline. */
  maxAgeMs: number | null;
  stopOnStatus: number[];
}

export type ResolvedRetry = ResolvedFixedRetry | ResolvedExponentialRetry;

/** The values a delivery uses: every field filled. */
export interface ResolvedDeliveryPolicy {
  method: DeliveryMethod;
  headers: Record<string, string>;
  body: BodyMode;
  timeoutMs: number;
  retry: ResolvedRetry;
}

/** The deployment settings a resolved policy falls back on. */
export type PolicyDefaults = Pick<Config, "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS">;

/** Whether a retry policy (stored or resolved) is the exponential form. */
export function isExponentialRetry<R extends RetryPolicy | ResolvedRetry>(
  retry: R,
): retry is Extract<R, { backoff: "exponential" }> {
  return "backoff" in retry && retry.backoff === "exponential";
}

/** Keeps the fields that are set; a policy with none becomes `{}`. */
function definedFields(policy: DeliveryPolicy): DeliveryPolicy {
  const kept: DeliveryPolicy = {};
  if (policy.method !== undefined) kept.method = policy.method;
  if (policy.headers !== undefined) kept.headers = policy.headers;
  if (policy.body !== undefined) kept.body = policy.body;
  if (policy.timeoutMs !== undefined) kept.timeoutMs = policy.timeoutMs;
  if (policy.retry !== undefined) kept.retry = policy.retry;
  return kept;
}

/**
 * The policy a new event or cron job stores: its own fields, each one it left out taken from the
 * organization's default. Field by field: own `headers` replace the default's headers (they are
 * not merged name by name), and own `retry` replaces the default's retry as a whole object.
 */
export function mergeWithDefault(
  own: DeliveryPolicy | null | undefined,
  orgDefault: DeliveryPolicy | null | undefined,
): DeliveryPolicy {
  return { ...definedFields(orgDefault ?? {}), ...definedFields(own ?? {}) };
}

/** The retry a delivery uses: the stored one with its optional parts filled, else RETRY_DELAYS_MS. */
export function resolveRetry(retry: RetryPolicy | undefined, defaults: Pick<Config, "RETRY_DELAYS_MS">): ResolvedRetry {
  if (retry === undefined) return { delaysMs: [...defaults.RETRY_DELAYS_MS], maxAgeMs: null, stopOnStatus: [] };
  const maxAgeMs = retry.maxAgeMs ?? null;
  const stopOnStatus = [...(retry.stopOnStatus ?? [])];
  if (isExponentialRetry(retry)) {
    return {
      attempts: retry.attempts,
      backoff: "exponential",
      initialDelayMs: retry.initialDelayMs,
      maxDelayMs: retry.maxDelayMs,
      jitter: retry.jitter ?? false,
      maxAgeMs,
      stopOnStatus,
    };
  }
  return { delaysMs: [...retry.delaysMs], maxAgeMs, stopOnStatus };
}

/**
 * The effective policy of a stored one (already merged with the organization's default when the
 * record was made). Null or `{}` gives exactly the behaviour of deliveries without a policy: POST,
 * the envelope body, no extra headers, DELIVERY_TIMEOUT_MS and the RETRY_DELAYS_MS schedule.
 */
export function resolvePolicy(
  stored: DeliveryPolicy | null | undefined,
  defaults: PolicyDefaults,
): ResolvedDeliveryPolicy {
  const policy = stored ?? {};
  return {
    method: policy.method ?? "POST",
    headers: { ...(policy.headers ?? {}) },
    body: policy.body ?? "envelope",
    timeoutMs: policy.timeoutMs ?? defaults.DELIVERY_TIMEOUT_MS,
    retry: resolveRetry(policy.retry, defaults),
  };
}

/** How many attempts a delivery makes at most: the first and each retry. */
export function maxAttempts(retry: ResolvedRetry): number {
  return (isExponentialRetry(retry) ? retry.attempts : retry.delaysMs.length) + 1;
}

/** The value of header `name` in `headers`, names compared case-insensitively; undefined when absent. */
export function headerValue(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (headers === undefined) return undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) if (key.toLowerCase() === wanted) return value;
  return undefined;
}
