import { isExponentialRetry, type ResolvedRetry } from "./policy.ts";

// When the next attempt of a failed delivery starts, or why there is none (contract §10.1): one
// small function per rule, and `planRetry`, which applies them in order.

/** Answers whose Retry-After header is obeyed. */
export const RETRY_AFTER_STATUSES: readonly number[] = [429, 503];

/**
 * The schedule's wait (ms) after attempt `failedAttempt` (1-based: 1 is the first attempt) failed,
 * or undefined when no retry is left. Fixed: `delaysMs[failedAttempt - 1]`. Exponential: with
 * i = failedAttempt - 1 and i < attempts, min(maxDelayMs, initialDelayMs × 2^i), and with jitter
 * a uniformly random part of it ("full jitter": `random()` × that, rounded down).
 */
export function nextRetryDelay(
  retry: ResolvedRetry,
  failedAttempt: number,
  random: () => number = Math.random,
): number | undefined {
  const index = failedAttempt - 1;
  if (!Number.isInteger(index) || index < 0) return undefined;
  if (!isExponentialRetry(retry)) return retry.delaysMs[index];
  if (index >= retry.attempts) return undefined;
  const delay = Math.min(retry.maxDelayMs, retry.initialDelayMs * 2 ** index);
  return retry.jitter ? Math.floor(random() * delay) : delay;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
/** `Sun, 06 Nov 1994 08:49:37 GMT` (the preferred form). */
const IMF_FIXDATE = new RegExp(`^[A-Za-z]{3}, (\\d{2}) ([A-Za-z]{3}) (\\d{4}) ${TIME} GMT$`);
/** `Sunday, 06-Nov-94 08:49:37 GMT` (obsolete RFC 850 form). */
const RFC_850 = new RegExp(`^[A-Za-z]{6,9}, (\\d{2})-([A-Za-z]{3})-(\\d{2}) ${TIME} GMT$`);
/** `Sun Nov  6 08:49:37 1994` (obsolete asctime form, UTC). */
const ASCTIME = new RegExp(`^[A-Za-z]{3} ([A-Za-z]{3}) ([ \\d]\\d) ${TIME} (\\d{4})$`);

interface DateParts {
  day: string;
  month: string;
  year: number;
  hour: string;
  minute: string;
  second: string;
}

/** The fields of an HTTP-date in any of its three forms, before their ranges are checked. */
function httpDateParts(text: string, now: number): DateParts | undefined {
  const fixdate = IMF_FIXDATE.exec(text);
  if (fixdate) {
    const [, day = "", month = "", year = "", hour = "", minute = "", second = ""] = fixdate;
    return { day, month, year: Number(year), hour, minute, second };
  }
  const rfc850 = RFC_850.exec(text);
  if (rfc850) {
    const [, day = "", month = "", year = "", hour = "", minute = "", second = ""] = rfc850;
    // A two-digit year more than 50 years ahead is the most recent past year with those digits.
    const thisYear = new Date(now).getUTCFullYear();
    let fullYear = Math.floor(thisYear / 100) * 100 + Number(year);
    if (fullYear > thisYear + 50) fullYear -= 100;
    return { day, month, year: fullYear, hour, minute, second };
  }
  const asctime = ASCTIME.exec(text);
  if (asctime) {
    const [, month = "", day = "", hour = "", minute = "", second = "", year = ""] = asctime;
    return { day: day.trim(), month, year: Number(year), hour, minute, second };
  }
  return undefined;
}

/** An HTTP-date (RFC 9110 §5.6.7, all three forms) as ms since the epoch; undefined when invalid. */
export function parseHttpDate(text: string, now: number): number | undefined {
  const parts = httpDateParts(text, now);
  if (parts === undefined) return undefined;
  const month = MONTHS.indexOf(parts.month.toLowerCase());
  const day = Number(parts.day);
  const hour = Number(parts.hour);
  const minute = Number(parts.minute);
  const second = Number(parts.second);
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  const date = new Date(0);
  date.setUTCFullYear(parts.year, month, day);
  // An impossible day (31 Feb) rolls over into another month: refused.
  if (date.getUTCDate() !== day || date.getUTCMonth() !== month) return undefined;
  // Second 60 (a leap second) is read as the next minute's first.
  date.setUTCHours(hour, minute, second, 0);
  return date.getTime();
}

/**
 * A Retry-After value as a wait in ms from `now`: delta-seconds (`120`) or an HTTP-date (a date
 * already past gives 0). Anything else, or no value, gives undefined.
 */
export function parseRetryAfter(value: string | null | undefined, now: Date | number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const nowMs = typeof now === "number" ? now : now.getTime();
  const at = parseHttpDate(text, nowMs);
  return at === undefined ? undefined : Math.max(0, at - nowMs);
}

/**
 * The least wait (ms) an answer asks for: a 429 or 503 with a valid Retry-After, capped at
 * `maxMs` (RETRY_AFTER_MAX_MS); undefined for any other answer.
 */
export function retryAfterDelay(
  responseStatus: number | null,
  retryAfter: string | null | undefined,
  now: Date | number,
  maxMs: number,
): number | undefined {
  if (responseStatus === null || !RETRY_AFTER_STATUSES.includes(responseStatus)) return undefined;
  const delay = parseRetryAfter(retryAfter, now);
  return delay === undefined ? undefined : Math.min(delay, maxMs);
}

/** The schedule's wait, lengthened to what the answer asked for (never shortened). */
export function withRetryAfter(scheduleDelayMs: number, retryAfterMs: number | undefined): number {
  return retryAfterMs === undefined ? scheduleDelayMs : Math.max(scheduleDelayMs, retryAfterMs);
}

/** The latest time (ms since the epoch) an attempt may start; undefined without `maxAgeMs`. */
export function maxAgeDeadline(retry: ResolvedRetry, scheduledTime: Date | number): number | undefined {
  if (retry.maxAgeMs === null) return undefined;
  return (typeof scheduledTime === "number" ? scheduledTime : scheduledTime.getTime()) + retry.maxAgeMs;
}

/** Whether an attempt starting at `startAt` would be later than scheduledTime + maxAgeMs. */
export function startsTooLate(retry: ResolvedRetry, scheduledTime: Date | number, startAt: Date | number): boolean {
  const deadline = maxAgeDeadline(retry, scheduledTime);
  return deadline !== undefined && (typeof startAt === "number" ? startAt : startAt.getTime()) > deadline;
}

/** Whether an answer ends the delivery at once: its status is one of `stopOnStatus`. */
export function stopsOnStatus(retry: ResolvedRetry, responseStatus: number | null): boolean {
  return responseStatus !== null && retry.stopOnStatus.includes(responseStatus);
}

export interface FailedAttempt {
  retry: ResolvedRetry;
  /** 1-based number of the attempt that failed. */
  attempt: number;
  /** Its answer's status; null when none came (timeout, refused connection). */
  responseStatus: number | null;
  /** Its answer's Retry-After header, if any. */
  retryAfter?: string | null | undefined;
  scheduledTime: Date | number;
  /** When the failure was recorded: waits count from here. */
  now: Date | number;
  /** RETRY_AFTER_MAX_MS. */
  retryAfterMaxMs: number;
  random?: () => number;
}

/** Why a failed attempt is the last one. */
export type FinalReason = "stopOnStatus" | "noAttemptsLeft" | "maxAge";

export type RetryPlan = { retryAt: number; final?: undefined } | { retryAt?: undefined; final: FinalReason };

/**
 * What follows a failed attempt: the time of the next one, or why there is none. In order: a
 * `stopOnStatus` answer ends the delivery; then the schedule's wait (none left ends it),
 * lengthened by a 429/503's Retry-After; a next attempt that would start after
 * scheduledTime + maxAgeMs ends it too.
 */
export function planRetry(failed: FailedAttempt): RetryPlan {
  const { retry, now } = failed;
  if (stopsOnStatus(retry, failed.responseStatus)) return { final: "stopOnStatus" };
  const scheduleDelay = nextRetryDelay(retry, failed.attempt, failed.random);
  if (scheduleDelay === undefined) return { final: "noAttemptsLeft" };
  const nowMs = typeof now === "number" ? now : now.getTime();
  const asked = retryAfterDelay(failed.responseStatus, failed.retryAfter, nowMs, failed.retryAfterMaxMs);
  const retryAt = nowMs + withRetryAfter(scheduleDelay, asked);
  if (startsTooLate(retry, failed.scheduledTime, retryAt)) return { final: "maxAge" };
  return { retryAt };
}
