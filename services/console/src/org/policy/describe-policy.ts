import type { BodyMode, DeliveryMethod, DeliveryPolicy, EffectiveRetry } from "../../api/types.ts";

// How a delivery policy is said on a page: spans of time, the retry schedule in words, the body mode.

/** What the API answers in place of a sensitive header's value; the console never has the value. */
export const REDACTED = "[redacted]";

const UNITS: readonly [number, string][] = [
  [86_400_000, "d"],
  [3_600_000, "h"],
  [60_000, "min"],
  [1_000, "s"],
];

/** A span as a person says it, to one decimal at most: `250 ms`, `3 s`, `1.5 min`, `2 h`, `1 d`. */
export function formatSpan(ms: number): string {
  for (const [size, unit] of UNITS) {
    if (ms >= size) return `${Math.round((ms / size) * 10) / 10} ${unit}`;
  }
  return `${ms} ms`;
}

const retries = (n: number) => (n === 1 ? "1 retry" : `${n} retries`);

/**
 * The schedule of retries after the first attempt: `3 retries: 3 s, 5 s, 10 s`, or
 * `up to 5 retries, exponential from 1 s to 1 min, with jitter`.
 */
export function describeRetries(retry: EffectiveRetry | NonNullable<DeliveryPolicy["retry"]>): string {
  if ("delaysMs" in retry) {
    if (retry.delaysMs.length === 0) return "no retries";
    return `${retries(retry.delaysMs.length)}: ${retry.delaysMs.map(formatSpan).join(", ")}`;
  }
  if (retry.attempts === 0) return "no retries";
  const jitter = retry.jitter ? ", with jitter" : "";
  return `up to ${retries(retry.attempts)}, exponential from ${formatSpan(retry.initialDelayMs)} to ${formatSpan(retry.maxDelayMs)}${jitter}`;
}

/** The deadline of a delivery's attempts, when it has one. */
export function describeMaxAge(maxAgeMs: number | null | undefined): string | undefined {
  return maxAgeMs ? `no attempt starts later than ${formatSpan(maxAgeMs)} after the scheduled time` : undefined;
}

/** The statuses that end a delivery at once, when there are any. */
export function describeStopOnStatus(codes: readonly number[] | undefined): string | undefined {
  return codes && codes.length > 0 ? `${codes.join(", ")} end the delivery at once` : undefined;
}

export const BODY_MODE_WORDS: { [Mode in BodyMode]: string } = {
  envelope: "envelope: JSON with the payload and the scheduled time",
  raw: "raw: the payload itself",
};

/** GET and DELETE deliveries carry no body, whatever the body mode says. */
export const sendsNoBody = (method: DeliveryMethod) => method === "GET" || method === "DELETE";
