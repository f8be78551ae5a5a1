import { createHash } from "node:crypto";
import type { RepeatOptions, RepeatStrategy } from "bullmq";
import { Duration } from "luxon";
import { nextCronRun } from "./expression.ts";

// When a cron job fires (contract §10.4), written once: the API's preview and `nextExecutionDate`,
// BullMQ's job scheduler (through `cronRepeatStrategy`, the strategy every cron queue and worker is
// built with) and the worker's catch-up all ask `nextFiring`. An expression (five fields, or six
// with seconds first) fires by the wall clock of its zone (expression.ts, next-run.ts); an interval
// fires every `everyMs` from its first firing; both only inside [startAt, endAt].

/** The timing of a cron job: an expression in a zone, or a fixed interval, inside an optional window. */
export interface Schedule {
  /** Five or six fields; null for an interval. */
  expression: string | null;
  timezone: string;
  /** The interval in ms; null for an expression. */
  everyMs: number | null;
  /** An interval's first firing (ms since the epoch): `startAt`, else one interval after the schedule was set. */
  firstAt: number | null;
  /** No firing before it (ms since the epoch); null: none. */
  startAt: number | null;
  /** No firing after it (ms since the epoch); null: none. */
  endAt: number | null;
}

/** The shortest interval (contract §10.4). */
export const MIN_EVERY_MS = 1_000;

export const EVERY_INVALID =
  "'every' must be an ISO 8601 duration of weeks, days, hours, minutes and seconds, such as PT30S, PT5M or P1D";
export const EVERY_TOO_SHORT = "'every' must be at least 1 second (PT1S)";

/**
 * The length of an ISO 8601 duration in ms (luxon's parser), or a sentence saying why it is not an
 * interval: years and months have no fixed length and are refused; a day is 24 hours (as
 * EventBridge's `rate(1 day)`), whatever the zone's clocks do.
 */
export function parseEvery(text: string): { ms: number } | { problem: string } {
  const duration = Duration.fromISO(text);
  if (!duration.isValid) return { problem: EVERY_INVALID };
  const { years, quarters, months } = duration.toObject();
  if (years || quarters || months) return { problem: EVERY_INVALID };
  const ms = duration.as("milliseconds");
  if (!Number.isFinite(ms) || ms <= 0) return { problem: EVERY_INVALID };
  if (ms < MIN_EVERY_MS) return { problem: EVERY_TOO_SHORT };
  return { ms: Math.round(ms) };
}

/** An interval's first firing: `startAt`, else one interval after `since` (when the schedule was set). */
export function firstIntervalFiring(everyMs: number, startAt: number | null, since: number): number {
  return startAt ?? since + everyMs;
}

/** What a cron job's record holds of its timing. */
export interface ScheduleFields {
  expression: string | null;
  timezone: string;
  everyMs: number | null;
  startAt: Date | null;
  endAt: Date | null;
  /** When the schedule was last set (created, its timing edited, enabled). */
  scheduleSince: Date;
}

/** The schedule of a cron job's record. */
export function scheduleOf(job: ScheduleFields): Schedule {
  const startAt = job.startAt?.getTime() ?? null;
  return {
    expression: job.everyMs === null ? job.expression : null,
    timezone: job.timezone,
    everyMs: job.everyMs,
    firstAt: job.everyMs === null ? null : firstIntervalFiring(job.everyMs, startAt, job.scheduleSince.getTime()),
    startAt,
    endAt: job.endAt?.getTime() ?? null,
  };
}

/** The first firing strictly after `after` (ms since the epoch), or undefined when there is none. */
export function nextFiring(schedule: Schedule, after: number): number | undefined {
  // Nothing before the window opens: searching from just before startAt finds a firing at startAt.
  const from = schedule.startAt !== null ? Math.max(after, schedule.startAt - 1) : after;
  let next: number | undefined;
  if (schedule.everyMs !== null && schedule.firstAt !== null) {
    const { everyMs, firstAt } = schedule;
    next = from < firstAt ? firstAt : firstAt + (Math.floor((from - firstAt) / everyMs) + 1) * everyMs;
  } else if (schedule.expression !== null) {
    next = nextCronRun(schedule.expression, schedule.timezone, new Date(from))?.getTime();
  }
  if (next === undefined || (schedule.endAt !== null && next > schedule.endAt)) return undefined;
  return next;
}

/** The firings strictly after `after` and at most `until`, oldest first, at most `limit` of them. */
export function firingsBetween(schedule: Schedule, after: number, until: number, limit: number): number[] {
  const firings: number[] = [];
  for (let at = nextFiring(schedule, after); at !== undefined && at <= until; at = nextFiring(schedule, at)) {
    if (firings.length >= limit) break;
    firings.push(at);
  }
  return firings;
}

/** The next `count` firings strictly after `after`, oldest first (fewer when the schedule ends). */
export function nextFirings(schedule: Schedule, after: number, count: number): number[] {
  return firingsBetween(schedule, after, Number.POSITIVE_INFINITY, count);
}

/**
 * How long after its firing a run is sent: 0 to `jitterMs`, the same for the same run wherever and
 * however often it is computed (a hash of the job and the firing), and spread evenly over the runs.
 */
export function jitterOf(cronJobId: string, scheduledFor: number, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  const digest = createHash("sha256").update(`${cronJobId}@${scheduledFor}`).digest();
  return Math.floor((digest.readUInt32BE(0) / 0x1_0000_0000) * (jitterMs + 1));
}

// A schedule as a BullMQ job scheduler holds it: `pattern` is `lead <ms> ` then the expression, or
// `every <ms> from <first firing>` for an interval; `tz`, `startDate` and `endDate` are BullMQ's own
// options (it also stops a scheduler past its endDate). Only `cronRepeatStrategy` reads `pattern`.
//
// The lead: each firing's job is due CRON_LEAD_MS before the firing, its id and `prevMillis` that
// instant, and the worker that takes it sends at the firing itself (deliver-cron-run.ts). BullMQ
// hands a due job over when Redis's timers wake the blocked worker, up to a tenth of a second late
// with Redis's default `hz` (docs/schedules.md, "Precision"): with the lead, that is not lateness.
// Schedulers made before the lead existed have no `lead` in their pattern and fire at the firing.

/** How long before its firing a cron firing's job is due (see above). */
export const CRON_LEAD_MS = 1_000;

const LEAD_PATTERN = /^lead (\d+) (.*)$/;
const INTERVAL_PATTERN = /^every (\d+) from (\d+)$/;

/** The job scheduler's repeat options of a schedule. */
export function repeatOptionsOf(schedule: Schedule): {
  pattern: string;
  tz: string;
  startDate?: Date;
  endDate?: Date;
} {
  const timing =
    schedule.everyMs !== null && schedule.firstAt !== null
      ? `every ${schedule.everyMs} from ${schedule.firstAt}`
      : (schedule.expression as string);
  const pattern = `lead ${CRON_LEAD_MS} ${timing}`;
  return {
    pattern,
    tz: schedule.timezone,
    ...(schedule.startAt !== null ? { startDate: new Date(schedule.startAt) } : {}),
    ...(schedule.endAt !== null ? { endDate: new Date(schedule.endAt) } : {}),
  };
}

const millisOf = (value: Date | string | number | undefined): number | null =>
  value === undefined || value === null ? null : new Date(value).getTime();

/** The schedule a job scheduler's repeat options hold (see repeatOptionsOf). */
export function scheduleOfRepeatOptions(options: RepeatOptions): Schedule {
  const pattern = LEAD_PATTERN.exec(options.pattern ?? "")?.[2] ?? options.pattern ?? "";
  const interval = INTERVAL_PATTERN.exec(pattern);
  const window = { startAt: millisOf(options.startDate), endAt: millisOf(options.endDate) };
  if (interval) {
    return {
      expression: null,
      timezone: options.tz ?? "UTC",
      everyMs: Number(interval[1]),
      firstAt: Number(interval[2]),
      ...window,
    };
  }
  return { expression: pattern, timezone: options.tz ?? "UTC", everyMs: null, firstAt: null, ...window };
}

/** How long before its firings a job scheduler's jobs are due: 0 for a pattern without a lead. */
export function leadOfRepeatOptions(options: Pick<RepeatOptions, "pattern">): number {
  return Number(LEAD_PATTERN.exec(options.pattern ?? "")?.[1] ?? 0);
}

/**
 * BullMQ's next job of a cron job's scheduler: `nextFiring` of its schedule, less the lead. Every
 * Queue and Worker of the cron queue is built with it (CRON_QUEUE_SETTINGS), so the scheduler fires
 * exactly when the preview says. BullMQ asks from the later of its clock and the job just taken
 * (`prevMillis`, its firing less the lead), so from at least that firing once the lead is added
 * back; the firings of the first lead after a scheduler is made are queued by
 * `createCronJobSchedulers` instead.
 */
export const cronRepeatStrategy: RepeatStrategy = (millis, options) => {
  const lead = leadOfRepeatOptions(options);
  const next = nextFiring(scheduleOfRepeatOptions(options), millis + lead);
  return next === undefined ? undefined : next - lead;
};

/** The firing a job scheduler's job is for, from its `prevMillis` and the scheduler's repeat options. */
export function firingOfSchedulerJob(prevMillis: number, options: Pick<RepeatOptions, "pattern">): number {
  return prevMillis + leadOfRepeatOptions(options);
}

/** The `settings` of every BullMQ Queue and Worker of the cron queue. */
export const CRON_QUEUE_SETTINGS = { repeatStrategy: cronRepeatStrategy };
