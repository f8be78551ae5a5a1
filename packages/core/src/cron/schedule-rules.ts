import { DAY_MS } from "../clock.ts";
import { CATCH_UP_POLICIES, type CatchUpPolicy, OVERLAP_POLICIES, type OverlapPolicy } from "../statuses.ts";
import type { CronJobTiming } from "./cron-jobs.ts";
import { cronNeverFires } from "./expression.ts";
import { EVERY_INVALID, nextFiring, parseEvery, scheduleOf } from "./schedule.ts";

// The rules of a cron job's timing (contract §10.4), each with its own sentence, for the API's
// create, edit and preview. Field by field first (the body is judged before the job is looked up);
// then the timing as a whole, once an edit is merged into the job's: exactly one of `expression`
// and `every`, a window that ends after it starts, in the future, with a firing inside it.

// ---------------------------------------------------------------------------------------------
// Bounds

/** The longest interval: a year of days (an interval is fixed; months and years are refused). */
export const MAX_EVERY_MS = 365 * DAY_MS;
/** The largest `maxRuns` (Postgres INTEGER holds it). */
export const MAX_MAX_RUNS = 1_000_000_000;
export const MIN_CATCH_UP_WINDOW_MS = 1_000;
/** 7 days. */
export const MAX_CATCH_UP_WINDOW_MS = 604_800_000;
/** 1 hour. */
export const MAX_JITTER_MS = 3_600_000;

// ---------------------------------------------------------------------------------------------
// Sentences

const quotedList = (items: readonly string[]) =>
  `${items
    .slice(0, -1)
    .map((item) => `'${item}'`)
    .join(", ")} or '${items.at(-1)}'`;

export const EXPRESSION_OR_EVERY = "Give either 'expression' or 'every'";
export const EVERY_TOO_LONG = "'every' must be at most 365 days (P365D)";
/** A time field that is no ISO 8601 time at all (`soon`, `2026-02-30T10:00:00Z`). */
export const timeInvalid = (field: "startAt" | "endAt") =>
  `'${field}' must be an ISO 8601 time, e.g. 2026-12-01T10:00:00Z`;
/** A time field that is a valid time without its zone (`2026-12-01T10:00:00`). */
export const timeZoneRequired = (field: "startAt" | "endAt") =>
  `'${field}' must include a time zone, e.g. 2026-12-01T10:00:00Z or 2026-12-01T10:00:00+02:00`;
export const END_AT_NOT_AFTER_START_AT = "'endAt' must be after 'startAt'";
export const END_AT_PAST = "'endAt' must be in the future";
export const NEVER_FIRES_BEFORE_END_AT = "The schedule never fires before 'endAt'";
export const MAX_RUNS_RANGE = `'maxRuns' must be an integer from 1 to ${MAX_MAX_RUNS}`;
export const CATCH_UP_ONE_OF = `'catchUp' must be one of ${quotedList(CATCH_UP_POLICIES)}`;
export const CATCH_UP_WINDOW_RANGE = `'catchUpWindowMs' must be an integer from ${MIN_CATCH_UP_WINDOW_MS} to ${MAX_CATCH_UP_WINDOW_MS} (milliseconds)`;
export const OVERLAP_ONE_OF = `'overlap' must be one of ${quotedList(OVERLAP_POLICIES)}`;
export const JITTER_RANGE = `'jitterMs' must be an integer from 0 to ${MAX_JITTER_MS} (milliseconds)`;

// ---------------------------------------------------------------------------------------------
// Field by field: each gives the value or the sentence refusing it.

export type Checked<T> = { ok: true; value: T } | { ok: false; message: string };
const accept = <T>(value: T): Checked<T> => ({ ok: true, value });
const refuse = (message: string): Checked<never> => ({ ok: false, message });

const integerIn = (value: unknown, min: number, max: number): value is number =>
  typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;

/** `every`: an ISO 8601 duration of weeks, days, hours, minutes and seconds, 1 s to 365 days. */
export function checkEvery(value: unknown): Checked<{ text: string; ms: number }> {
  if (typeof value !== "string") return refuse(EVERY_INVALID);
  const parsed = parseEvery(value);
  if ("problem" in parsed) return refuse(parsed.problem);
  if (parsed.ms > MAX_EVERY_MS) return refuse(EVERY_TOO_LONG);
  return accept({ text: value, ms: parsed.ms });
}

export function checkMaxRuns(value: unknown): Checked<number> {
  return integerIn(value, 1, MAX_MAX_RUNS) ? accept(value) : refuse(MAX_RUNS_RANGE);
}

export function checkCatchUp(value: unknown): Checked<CatchUpPolicy> {
  const policy = CATCH_UP_POLICIES.find((candidate) => candidate === value);
  return policy === undefined ? refuse(CATCH_UP_ONE_OF) : accept(policy);
}

export function checkCatchUpWindow(value: unknown): Checked<number> {
  return integerIn(value, MIN_CATCH_UP_WINDOW_MS, MAX_CATCH_UP_WINDOW_MS)
    ? accept(value)
    : refuse(CATCH_UP_WINDOW_RANGE);
}

export function checkOverlap(value: unknown): Checked<OverlapPolicy> {
  const policy = OVERLAP_POLICIES.find((candidate) => candidate === value);
  return policy === undefined ? refuse(OVERLAP_ONE_OF) : accept(policy);
}

export function checkJitter(value: unknown): Checked<number> {
  return integerIn(value, 0, MAX_JITTER_MS) ? accept(value) : refuse(JITTER_RANGE);
}

// ---------------------------------------------------------------------------------------------
// The timing as a whole.

/** What an edit gives of the timing: a field given replaces, `null` clears (where it may). */
export interface CronJobTimingEdit {
  expression?: string | null | undefined;
  every?: { text: string; ms: number } | null | undefined;
  timezone?: string | undefined;
  startAt?: Date | null | undefined;
  endAt?: Date | null | undefined;
  maxRuns?: number | null | undefined;
  catchUp?: CatchUpPolicy | undefined;
  catchUpWindowMs?: number | undefined;
  overlap?: OverlapPolicy | undefined;
  jitterMs?: number | undefined;
}

const TIMING_FIELDS = [
  "expression",
  "every",
  "timezone",
  "startAt",
  "endAt",
  "maxRuns",
  "catchUp",
  "catchUpWindowMs",
  "overlap",
  "jitterMs",
] as const satisfies readonly (keyof CronJobTimingEdit)[];

/** Whether an edit gives at least one timing field (`null` counts: it clears the field). */
export const hasTimingEdit = (edit: CronJobTimingEdit) => TIMING_FIELDS.some((field) => edit[field] !== undefined);

/** Whether one request gives both an expression and an interval: refused before anything is read. */
export const givesBothExpressionAndEvery = (edit: Pick<CronJobTimingEdit, "expression" | "every">) =>
  edit.expression !== undefined && edit.expression !== null && edit.every !== undefined && edit.every !== null;

/**
 * The timing after an edit. An expression given replaces the job's interval and an interval its
 * expression, so one edit switches a job between the two; `null` clears either (the result must
 * still have one: `timingProblem`).
 */
export function applyTimingEdit(before: CronJobTiming, edit: CronJobTimingEdit): CronJobTiming {
  const keep = <T>(given: T | undefined, current: T): T => (given === undefined ? current : given);
  let { expression, every } = before;
  if (edit.every !== undefined && edit.every !== null) {
    every = edit.every;
    expression = null;
  } else if (edit.expression !== undefined && edit.expression !== null) {
    expression = edit.expression;
    every = null;
  } else {
    expression = keep(edit.expression, expression);
    every = keep(edit.every, every);
  }
  return {
    expression,
    every,
    timezone: keep(edit.timezone, before.timezone),
    startAt: keep(edit.startAt, before.startAt),
    endAt: keep(edit.endAt, before.endAt),
    maxRuns: keep(edit.maxRuns, before.maxRuns),
    catchUp: keep(edit.catchUp, before.catchUp),
    catchUpWindowMs: keep(edit.catchUpWindowMs, before.catchUpWindowMs),
    overlap: keep(edit.overlap, before.overlap),
    jitterMs: keep(edit.jitterMs, before.jitterMs),
  };
}

/**
 * Whether two timings fire at different times (expression, interval, an expression's zone, window).
 * Only such a change sets the schedule again (`schedule_since`, the job scheduler); `maxRuns` and
 * the catch-up, overlap and jitter policies are read by the worker at each firing, and an interval
 * counts milliseconds whatever its zone.
 */
export function firingTimesDiffer(a: CronJobTiming, b: CronJobTiming): boolean {
  return (
    a.expression !== b.expression ||
    a.every?.text !== b.every?.text ||
    a.every?.ms !== b.every?.ms ||
    (a.expression !== null && a.timezone !== b.timezone) ||
    a.startAt?.getTime() !== b.startAt?.getTime() ||
    a.endAt?.getTime() !== b.endAt?.getTime()
  );
}

/** The schedule of a timing set at `since` (see scheduleOf). */
export function scheduleOfTiming(timing: CronJobTiming, since: Date) {
  return scheduleOf({
    expression: timing.expression,
    timezone: timing.timezone,
    everyMs: timing.every?.ms ?? null,
    startAt: timing.startAt,
    endAt: timing.endAt,
    scheduleSince: since,
  });
}

/**
 * What is wrong with a whole timing, or nothing: `refused` for a contradiction in what was given,
 * `neverFires` for a timing that is well formed but has no firing after `now` (the preview answers
 * those with `neverFires: true`; create and edit refuse them too). `since` is when the schedule is
 * set (an interval without `startAt` first fires one interval after it).
 */
export function timingProblem(
  timing: CronJobTiming,
  now: Date,
  since: Date,
): { kind: "refused" | "neverFires"; message: string } | undefined {
  if ((timing.expression === null) === (timing.every === null))
    return { kind: "refused", message: EXPRESSION_OR_EVERY };
  if (timing.startAt !== null && timing.endAt !== null && timing.endAt.getTime() <= timing.startAt.getTime()) {
    return { kind: "refused", message: END_AT_NOT_AFTER_START_AT };
  }
  if (timing.endAt !== null && timing.endAt.getTime() <= now.getTime()) {
    return { kind: "neverFires", message: END_AT_PAST };
  }
  if (nextFiring(scheduleOfTiming(timing, since), now.getTime()) === undefined) {
    const message =
      timing.endAt !== null || timing.expression === null
        ? NEVER_FIRES_BEFORE_END_AT
        : cronNeverFires(timing.expression);
    return { kind: "neverFires", message };
  }
  return undefined;
}
