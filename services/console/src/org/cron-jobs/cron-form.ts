import type {
  CatchUpPolicy,
  CreateCronJobRequest,
  CronJob,
  CronPreviewQuery,
  OverlapPolicy,
  UpdateCronJobRequest,
} from "../../api/types.ts";
import { isoToLocalInput, localInputToIso } from "../../format.ts";
import { labelsText, parseLabels, sameLabels } from "../labels.ts";
import { DEFAULT_CATCH_UP_WINDOW_MS } from "./describe-schedule.ts";

// A cron job as its form edits it (contract §4, §10.4): text as typed, read on submit. A create
// leaves out what is empty (the API's defaults apply); an edit sends only what the form changed, a
// cleared field as null. The ranges and the words for a mistake are the API's: the form only reads
// numbers and times.

/** How the job fires: by a cron expression, or every fixed interval. */
export type FiringMode = "expression" | "every";

/** A span typed as a count of a unit (30 seconds, 1 hour). */
export interface SpanField {
  count: string;
  unitMs: number;
}

export interface CronForm {
  destination: string;
  payload: string;
  /** IANA zone; "" is UTC. */
  timezone: string;
  mode: FiringMode;
  expression: string;
  /** ISO 8601 duration (`PT30S`). */
  every: string;
  /** `datetime-local` values, in the browser's zone; "" is none. */
  startAt: string;
  endAt: string;
  /** "" is no limit. */
  maxRuns: string;
  catchUp: CatchUpPolicy;
  /** With `catchUp: all`; an empty count is the API's default (1 h). */
  catchUpWindow: SpanField;
  overlap: OverlapPolicy;
  /** An empty count is no jitter. */
  jitter: SpanField;
  /** One `key:value` a line. */
  labels: string;
  /** "" is none. */
  callbackUrl: string;
}

/** Units a span is typed in, largest first. */
export const SPAN_UNITS: readonly { ms: number; label: string }[] = [
  { ms: 3_600_000, label: "hours" },
  { ms: 60_000, label: "minutes" },
  { ms: 1_000, label: "seconds" },
  { ms: 1, label: "milliseconds" },
];

/** The intervals the form offers in one pick; any other ISO 8601 duration can be typed. */
export const EVERY_PRESETS: readonly { every: string; label: string }[] = [
  { every: "PT30S", label: "every 30 seconds" },
  { every: "PT1M", label: "every minute" },
  { every: "PT5M", label: "every 5 minutes" },
  { every: "PT15M", label: "every 15 minutes" },
  { every: "PT1H", label: "every hour" },
  { every: "P1D", label: "every day" },
  { every: "P1W", label: "every week" },
];

export const NEW_CRON_FORM: CronForm = {
  destination: "",
  payload: "{}",
  timezone: "",
  mode: "expression",
  expression: "",
  every: "PT5M",
  startAt: "",
  endAt: "",
  maxRuns: "",
  catchUp: "skip",
  catchUpWindow: { count: "", unitMs: 60_000 },
  overlap: "allow",
  jitter: { count: "", unitMs: 1_000 },
  labels: "",
  callbackUrl: "",
};

/** A span as the largest unit it is a whole number of; 0 (or none) is an empty count. */
export function spanFieldOf(ms: number | null | undefined, emptyUnitMs = 1_000): SpanField {
  if (!ms) return { count: "", unitMs: emptyUnitMs };
  const unit = SPAN_UNITS.find((candidate) => ms % candidate.ms === 0) ?? { ms: 1 };
  return { count: String(ms / unit.ms), unitMs: unit.ms };
}

/** The form of a cron job as it is. */
export function cronFormOf(job: CronJob): CronForm {
  const every = job.every !== null;
  return {
    destination: job.destination,
    payload: job.payload,
    timezone: job.timezone,
    mode: every ? "every" : "expression",
    expression: job.expression ?? "",
    every: job.every ?? NEW_CRON_FORM.every,
    startAt: job.startAt ? isoToLocalInput(job.startAt) : "",
    endAt: job.endAt ? isoToLocalInput(job.endAt) : "",
    maxRuns: job.maxRuns === null ? "" : String(job.maxRuns),
    catchUp: job.catchUp,
    catchUpWindow: spanFieldOf(job.catchUpWindowMs, 60_000),
    overlap: job.overlap,
    jitter: spanFieldOf(job.jitterMs),
    labels: labelsText(job.labels),
    callbackUrl: job.callbackUrl ?? "",
  };
}

class FormProblem extends Error {}

/** A whole number typed in a field; "" is undefined. */
function count(value: string, field: string): number | undefined {
  const trimmed = value.trim();
  if (trimmed === "") return undefined;
  if (!/^\d+$/.test(trimmed)) throw new FormProblem(`${field} must be a whole number`);
  return Number(trimmed);
}

/** A span's milliseconds; an empty count is undefined. */
function spanMs(span: SpanField, field: string): number | undefined {
  const n = count(span.count, field);
  return n === undefined ? undefined : n * span.unitMs;
}

/** A `datetime-local` value as an ISO instant with its zone; "" is undefined. */
function instant(value: string, field: string): string | undefined {
  if (value.trim() === "") return undefined;
  const iso = localInputToIso(value);
  if (!iso) throw new FormProblem(`${field} is not a valid date and time`);
  return iso;
}

/** Every value the form says, read: undefined where a field is empty. */
function readForm(form: CronForm) {
  return {
    destination: form.destination.trim(),
    payload: form.payload,
    timezone: form.timezone.trim(),
    expression: form.expression.trim(),
    every: form.every.trim(),
    startAt: instant(form.startAt, "The start"),
    endAt: instant(form.endAt, "The end"),
    maxRuns: count(form.maxRuns, "The run limit"),
    catchUpWindowMs: spanMs(form.catchUpWindow, "The catch-up window"),
    jitterMs: spanMs(form.jitter, "The jitter"),
    labels: labelsOf(form.labels),
    callbackUrl: form.callbackUrl.trim(),
  };
}

function labelsOf(text: string): Record<string, string> {
  const read = parseLabels(text);
  if ("problem" in read) throw new FormProblem(read.problem);
  return read.labels;
}

type Outcome<Body> = { body: Body } | { problem: string };

function outcome<Body>(build: () => Body): Outcome<Body> {
  try {
    return { body: build() };
  } catch (failure) {
    if (failure instanceof FormProblem) return { problem: failure.message };
    throw failure;
  }
}

/** POST /api/cron-jobs of a new job's form: empty fields and default policies left out. */
export function createRequestOfForm(form: CronForm): Outcome<CreateCronJobRequest> {
  return outcome(() => {
    const read = readForm(form);
    const body: CreateCronJobRequest = { destination: read.destination, payload: read.payload };
    if (read.timezone) body.timezone = read.timezone;
    if (form.mode === "expression" && read.expression) body.expression = read.expression;
    if (form.mode === "every" && read.every) body.every = read.every;
    if (read.startAt !== undefined) body.startAt = read.startAt;
    if (read.endAt !== undefined) body.endAt = read.endAt;
    if (read.maxRuns !== undefined) body.maxRuns = read.maxRuns;
    if (form.catchUp !== "skip") body.catchUp = form.catchUp;
    if (form.catchUp === "all" && read.catchUpWindowMs !== undefined) body.catchUpWindowMs = read.catchUpWindowMs;
    if (form.overlap !== "allow") body.overlap = form.overlap;
    if (read.jitterMs !== undefined) body.jitterMs = read.jitterMs;
    if (Object.keys(read.labels).length > 0) body.labels = read.labels;
    if (read.callbackUrl) body.callbackUrl = read.callbackUrl;
    return body;
  });
}

export const NOTHING_CHANGED = "Nothing to save: the form says what the cron job already is.";

/**
 * PUT /api/cron-jobs/{id} of an existing job's form: only the fields the form changed (a field sent
 * is judged again, and a change of the firing times starts the schedule over), a cleared start, end
 * or run limit as null. A change from an expression to an interval clears the expression, and the
 * other way round.
 */
export function editRequestOfForm(form: CronForm, job: CronJob): Outcome<UpdateCronJobRequest> {
  return outcome(() => {
    const was = cronFormOf(job);
    const read = readForm(form);
    const body: UpdateCronJobRequest = {};
    if (read.destination !== job.destination) body.destination = read.destination;
    if (form.payload !== job.payload) body.payload = form.payload;
    if ((read.timezone || "UTC") !== job.timezone) body.timezone = read.timezone || "UTC";
    if (form.mode === "expression") {
      if (was.mode !== "expression") {
        body.expression = read.expression;
        body.every = null;
      } else if (read.expression !== job.expression) body.expression = read.expression;
    } else if (was.mode !== "every") {
      body.every = read.every;
      body.expression = null;
    } else if (read.every !== job.every) body.every = read.every;
    // Times compare as the inputs show them (to the minute): an untouched start keeps its seconds.
    if (form.startAt !== was.startAt) body.startAt = read.startAt ?? null;
    if (form.endAt !== was.endAt) body.endAt = read.endAt ?? null;
    if ((read.maxRuns ?? null) !== job.maxRuns) body.maxRuns = read.maxRuns ?? null;
    if (form.catchUp !== job.catchUp) body.catchUp = form.catchUp;
    // A window or a jitter left empty is the API's default (1 h, none): they are never null.
    const catchUpWindowMs = read.catchUpWindowMs ?? DEFAULT_CATCH_UP_WINDOW_MS;
    if (form.catchUp === "all" && catchUpWindowMs !== job.catchUpWindowMs) body.catchUpWindowMs = catchUpWindowMs;
    if (form.overlap !== job.overlap) body.overlap = form.overlap;
    if ((read.jitterMs ?? 0) !== job.jitterMs) body.jitterMs = read.jitterMs ?? 0;
    if (!sameLabels(read.labels, job.labels)) body.labels = read.labels;
    if (read.callbackUrl !== (job.callbackUrl ?? "")) body.callbackUrl = read.callbackUrl || null;
    if (Object.keys(body).length === 0) throw new FormProblem(NOTHING_CHANGED);
    return body;
  });
}

/** The fields whose change moves the firing times: the API then sets the schedule again from the save. */
const FIRING_FIELDS = ["expression", "every", "startAt", "endAt"] as const;

/**
 * True when a save of the form leaves the job's firing times as they are (its run limit, catch-up,
 * overlap and jitter may change, and an interval's zone, which moves none of its firings): the job
 * then keeps its next run, and an interval its phase.
 */
export function firingTimesKept(form: CronForm, job: CronJob): boolean {
  const outcome = editRequestOfForm(form, job);
  if ("problem" in outcome) return outcome.problem === NOTHING_CHANGED;
  if (job.expression !== null && outcome.body.timezone !== undefined) return false;
  return FIRING_FIELDS.every((field) => outcome.body[field] === undefined);
}

/** How many firing times the preview asks for. */
export const PREVIEW_COUNT = 5;

/**
 * GET /api/cron-jobs/preview of the form: the fields that say when it fires; else what the form
 * lacks (`empty`: no expression or interval yet) or cannot read (`problem`).
 */
export function previewQueryOfForm(
  form: CronForm,
): { query: CronPreviewQuery } | { empty: string } | { problem: string } {
  try {
    const read = readForm(form);
    const query: CronPreviewQuery = { timezone: read.timezone || "UTC", count: PREVIEW_COUNT };
    if (form.mode === "expression") {
      if (!read.expression) return { empty: "Type a cron expression to see when it fires." };
      query.expression = read.expression;
    } else {
      if (!read.every) return { empty: "Pick or type an interval to see when it fires." };
      query.every = read.every;
    }
    if (read.startAt !== undefined) query.startAt = read.startAt;
    if (read.endAt !== undefined) query.endAt = read.endAt;
    if (read.maxRuns !== undefined) query.maxRuns = read.maxRuns;
    // They change no firing time, but the preview judges them as a save would.
    if (form.catchUp !== "skip") query.catchUp = form.catchUp;
    if (form.catchUp === "all" && read.catchUpWindowMs !== undefined) query.catchUpWindowMs = read.catchUpWindowMs;
    if (form.overlap !== "allow") query.overlap = form.overlap;
    if (read.jitterMs !== undefined) query.jitterMs = read.jitterMs;
    return { query };
  } catch (failure) {
    if (failure instanceof FormProblem) return { problem: failure.message };
    throw failure;
  }
}
