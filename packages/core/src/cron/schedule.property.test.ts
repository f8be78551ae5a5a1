import { randomBytes } from "node:crypto";
import { type Job, Queue, type RepeatOptions } from "bullmq";
import { CronExpressionParser } from "cron-parser";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { deleteKeys, testRedisUrl } from "../../../../test/support/context.ts";
import { type CronJobData, cronSchedulerId, QUEUE_NAMES } from "../queues.ts";
import { createRedis } from "../redis.ts";
import { createCronJobSchedulers, schedulerFiringJobIds } from "./cron-job-schedulers.ts";
import { checkCronExpression } from "./expression.ts";
import {
  CRON_LEAD_MS,
  CRON_QUEUE_SETTINGS,
  firingsBetween,
  nextFiring,
  nextFirings,
  type Schedule,
  type ScheduleFields,
  scheduleOf,
} from "./schedule.ts";

// The places that say when a cron job fires agree, over random schedules (contract §10.4):
//
//   (a) `nextFirings`: the preview and a job's `nextExecutionDate`;
//   (b) BullMQ's job scheduler itself, on real Redis, built with CRON_QUEUE_SETTINGS: the job
//       `createCronJobSchedulers` upserts, then each next one as a Worker makes it when it takes a
//       firing (worker.js: `upsertJobScheduler(repeatJobKey, job.opts.repeat, …, { override: false,
//       producerId: job.id })`), its clock set to the moment the worker takes the job;
//   (c) `firingsBetween`: what catch-up delivers of the firings a worker missed;
//   (d) `nextFiring`, asked again from each firing;
//
// and (e) the firings are the times the expression names on the zone's clock, with the rule for
// changes of the clocks (docs/operations.md, "Cron jobs across daylight saving changes"), checked
// against an enumeration of every second (or minute) of the zone's wall clock.
//
// Random: 5- and 6-field expressions, intervals from 1 s to days, zones with changes of an hour
// and of half an hour and without, windows [startAt, endAt], instants around the zones' changes.
// SCHEDULE_PROPERTY_SEED replays a run (the seed is printed when a property fails);
// SCHEDULE_PROPERTY_RUNS sets how many schedules each property tries.

const SEED = Number(process.env.SCHEDULE_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.SCHEDULE_PROPERTY_RUNS ?? 100);
/** With the seed, the path fast-check printed: that case alone. */
const PATH = process.env.SCHEDULE_PROPERTY_PATH;

/** Runs a property with the file's seed; a failure says how to run it again, and why it failed. */
async function check<T>(property: fc.IAsyncProperty<T> | fc.IProperty<T>, numRuns: number): Promise<void> {
  try {
    await fc.assert(property, { seed: SEED, numRuns, ...(PATH === undefined ? {} : { path: PATH }) });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const cause = error instanceof Error && error.cause instanceof Error ? `\n\n${error.cause.message}` : "";
    throw new Error(`${message}${cause}\n\nReplay with SCHEDULE_PROPERTY_SEED=${SEED}`);
  }
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ZONES = ["Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"] as const;
const FIRST_YEAR = 2027;
const LAST_YEAR = 2035;

// ---------------------------------------------------------------------------------------------
// The zones' clocks, read from the runtime's time zone data (as luxon and cron-parser read them).

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset at an instant, in ms (wall clock = instant + offset). */
function offsetAt(zone: string, millis: number): number {
  let format = formatters.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, format);
  }
  const part: Record<string, number> = {};
  for (const { type, value } of format.formatToParts(millis)) part[type] = Number(value);
  const wall = Date.UTC(part.year ?? 0, (part.month ?? 1) - 1, part.day ?? 1, part.hour, part.minute, part.second);
  return wall - Math.floor(millis / 1_000) * 1_000;
}

/** A change of a zone's clocks: from `at` (its first instant) the offset is `after` instead of `before`. */
interface Change {
  at: number;
  before: number;
  after: number;
}

/** Every change of a zone's clocks between FIRST_YEAR and LAST_YEAR, oldest first. */
function changesOf(zone: string): Change[] {
  const changes: Change[] = [];
  const from = Date.UTC(FIRST_YEAR - 1, 11, 1);
  const to = Date.UTC(LAST_YEAR + 1, 1, 1);
  let previous = offsetAt(zone, from);
  for (let day = from + DAY; day <= to; day += DAY) {
    const offset = offsetAt(zone, day);
    if (offset === previous) continue;
    let [low, high] = [day - DAY, day];
    while (high - low > 1_000) {
      const middle = low + Math.floor((high - low) / 2_000) * 1_000;
      if (offsetAt(zone, middle) === previous) low = middle;
      else high = middle;
    }
    changes.push({ at: high, before: previous, after: offset });
    previous = offset;
  }
  return changes;
}

const CHANGES = new Map<string, Change[]>(ZONES.map((zone) => [zone, changesOf(zone)]));
const changesIn = (zone: string) => CHANGES.get(zone) ?? [];

/** The offset at an instant from the zone's changes (no formatter per second). */
function offsetFrom(zone: string, changes: Change[], millis: number): number {
  let offset: number | undefined;
  for (const change of changes) {
    if (change.at > millis) break;
    offset = change.after;
  }
  return offset ?? (changes[0] ? changes[0].before : offsetAt(zone, millis));
}

const iso = (millis: number) => new Date(millis).toISOString();
const isos = (list: readonly number[]) => list.map(iso);

// ---------------------------------------------------------------------------------------------
// Random schedules.

const pick = <T>(values: readonly T[]) => fc.constantFrom(...values);
const between = (min: number, max: number) => fc.integer({ min, max });

/** One field: `*`, a value, a list, a range, a step of `*` or of a range; `likely` values come often. */
function field(min: number, max: number, likely: readonly number[], star: number) {
  const value = fc.oneof({ arbitrary: pick(likely), weight: 2 }, { arbitrary: between(min, max), weight: 1 });
  return fc.oneof(
    { arbitrary: fc.constant("*"), weight: star },
    { arbitrary: value.map(String), weight: 4 },
    { arbitrary: fc.uniqueArray(value, { minLength: 2, maxLength: 4 }).map((v) => v.join(",")), weight: 2 },
    {
      arbitrary: fc.tuple(value, value).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
      weight: 2,
    },
    { arbitrary: between(1, Math.max(1, Math.floor((max - min) / 2))).map((step) => `*/${step}`), weight: 2 },
    {
      arbitrary: fc
        .tuple(value, value, between(1, 5))
        .map(([a, b, step]) => `${Math.min(a, b)}-${Math.max(a, b)}/${step}`),
      weight: 1,
    },
  );
}

/**
 * Five fields, or six with seconds first. Hours lean towards those the changes of the clocks
 * skip or repeat (0 to 3), months and days of the week towards those the changes fall in.
 */
const expressionArbitrary = fc
  .tuple(
    fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 3 },
      { arbitrary: field(0, 59, [0, 15, 30, 45], 2), weight: 2 },
    ),
    field(0, 59, [0, 15, 30, 45], 3),
    field(0, 23, [0, 1, 2, 3], 3),
    fc.oneof({ arbitrary: fc.constant("*"), weight: 6 }, { arbitrary: field(1, 31, [1, 15, 28, 31], 0), weight: 1 }),
    fc.oneof({ arbitrary: fc.constant("*"), weight: 4 }, { arbitrary: field(1, 12, [3, 4, 10, 11], 0), weight: 1 }),
    fc.oneof(
      { arbitrary: fc.constant("*"), weight: 4 },
      { arbitrary: field(0, 6, [0, 0, 6], 0), weight: 1 },
      { arbitrary: pick(["SUN", "MON-FRI", "SAT,SUN"]), weight: 1 },
    ),
  )
  .map(([second, ...rest]) => (second === undefined ? rest : [second, ...rest]).join(" "))
  .filter((expression) => checkCronExpression(expression).kind === "fires");

/** Intervals from 1 s to a week: whole seconds, odd milliseconds, minutes, hours, days. */
const everyArbitrary = fc.oneof(
  between(1, 59).map((s) => s * 1_000),
  between(1_000, 120_000),
  between(1, 180).map((m) => m * 60_000),
  between(1, 48).map((h) => h * HOUR),
  between(1, 7).map((d) => d * DAY),
);

/** An instant: any time of the years tested, or near one of the zone's changes (or Paris's, for zones without). */
const instantAround = (zone: string) => {
  const changes = changesIn(zone).length > 0 ? changesIn(zone) : changesIn("Europe/Paris");
  const near = (range: number) =>
    fc.tuple(pick(changes.map((change) => change.at)), between(-range, range)).map(([change, delta]) => change + delta);
  return fc.oneof(
    { arbitrary: between(Date.UTC(FIRST_YEAR, 0, 1), Date.UTC(LAST_YEAR, 11, 1)), weight: 1 },
    { arbitrary: near(26 * HOUR), weight: 2 },
    { arbitrary: near(2 * HOUR), weight: 2 },
  );
};

interface Case {
  schedule: Schedule;
  /** The instant the schedule is asked from (the API's now, the scheduler's upsert). */
  now: number;
}

/** A cron job's timing as its record holds it, read by `scheduleOf` as every place reads it. */
const caseArbitrary: fc.Arbitrary<Case> = pick(ZONES).chain((timezone) =>
  fc
    .record({
      now: instantAround(timezone),
      expression: fc.oneof({ arbitrary: expressionArbitrary, weight: 3 }, { arbitrary: fc.constant(null), weight: 1 }),
      every: everyArbitrary,
      /** When the schedule was set, before now. */
      since: between(0, 30 * DAY),
      startAt: fc.option(between(-3 * DAY, 3 * DAY), { nil: null, freq: 2 }),
      /** From startAt (or now); a negative one is a schedule already over. */
      endAt: fc.option(
        fc.oneof({ arbitrary: between(0, 5 * DAY), weight: 8 }, { arbitrary: between(-DAY, 0), weight: 1 }),
        {
          nil: null,
          freq: 2,
        },
      ),
    })
    .map(({ now, expression, every, since, startAt, endAt }) => {
      const start = startAt === null ? null : now + startAt;
      const fields: ScheduleFields = {
        expression,
        timezone,
        everyMs: expression === null ? every : null,
        startAt: start === null ? null : new Date(start),
        endAt: endAt === null ? null : new Date((start ?? now) + endAt),
        scheduleSince: new Date(now - since),
      };
      return { schedule: scheduleOf(fields), now };
    }),
);

const describeCase = ({ schedule, now }: Case) => ({
  now: iso(now),
  timing: schedule.expression ?? `every ${schedule.everyMs} ms from ${iso(schedule.firstAt ?? 0)}`,
  timezone: schedule.timezone,
  window: [
    schedule.startAt === null ? null : iso(schedule.startAt),
    schedule.endAt === null ? null : iso(schedule.endAt),
  ],
});

// ---------------------------------------------------------------------------------------------
// BullMQ's job scheduler on real Redis, its clock set to the moment it acts.

const prefix = `test-${randomBytes(6).toString("hex")}`;
const redis = createRedis(testRedisUrl());
let queue: Queue<CronJobData>;

beforeAll(() => {
  queue = new Queue<CronJobData>(QUEUE_NAMES.cron, { connection: redis, prefix, settings: CRON_QUEUE_SETTINGS });
});
afterAll(async () => {
  vi.useRealTimers();
  await queue.close();
  await deleteKeys(redis, `${prefix}:*`);
  await redis.quit();
});

/** What a scheduler's delayed job says of its firing, read back from Redis. */
interface DelayedFiring {
  job: Job<CronJobData>;
  /** timestamp + delay: when BullMQ makes it due. */
  at: number;
  /** The score of the delayed set, which BullMQ promotes by. */
  score: number;
  /** `prevMillis` (what the worker takes for the run's scheduledFor) and the time in its id. */
  prevMillis: number | undefined;
  idMillis: number;
}

async function delayedFiring(jobId: string | undefined): Promise<DelayedFiring | undefined> {
  if (jobId === undefined) return undefined;
  const job = await queue.getJob(jobId);
  if (!job) throw new Error(`the scheduler's job ${jobId} is not in Redis`);
  const score = Number(await redis.zscore(`${prefix}:${QUEUE_NAMES.cron}:delayed`, jobId));
  return {
    job,
    at: job.timestamp + job.delay,
    score: Math.floor(score / 0x1000),
    prevMillis: (job.opts as { prevMillis?: number }).prevMillis,
    idMillis: Number(jobId.split(":").at(-1)),
  };
}

/**
 * The firing of a delayed job, after checking that every place BullMQ keeps it says the same: the
 * job is due a lead before its firing (schedule.ts).
 */
function firingOf(delayed: DelayedFiring): number {
  expect({ score: delayed.score, prevMillis: delayed.prevMillis, idMillis: delayed.idMillis }).toEqual({
    score: delayed.at,
    prevMillis: delayed.at,
    idMillis: delayed.at,
  });
  return delayed.at + CRON_LEAD_MS;
}

let schedulerCount = 0;

/** What Queue.upsertJobScheduler throws for an endDate already past. */
const BULLMQ_PAST_END = "End date must be greater than current timestamp";

/**
 * Puts the schedule on a job scheduler at `now` (createCronJobSchedulers, as the API does), then
 * takes each firing as a worker would, `lateness[i]` ms after it: the firings BullMQ makes.
 */
async function bullmqFirings(
  schedule: Schedule,
  now: number,
  lateness: (firing: number, step: number) => number,
  steps: number,
): Promise<{ firings: number[]; takenAt: number[]; refused: boolean }> {
  const cronJobId = `prop${schedulerCount++}`;
  const schedulerId = cronSchedulerId(cronJobId);
  const firings: number[] = [];
  const takenAt: number[] = [];
  vi.useFakeTimers({ toFake: ["Date"] });
  try {
    vi.setSystemTime(now);
    try {
      await createCronJobSchedulers(queue).schedule(cronJobId, schedule);
    } catch (error) {
      // BullMQ refuses a scheduler whose endDate has passed (Queue.upsertJobScheduler): no firing.
      if (!(error instanceof Error && error.message === BULLMQ_PAST_END) || (schedule.endAt ?? now) >= now) throw error;
      return { firings, takenAt, refused: true };
    }
    const scheduler = await queue.getJobScheduler(schedulerId);
    const firstId = scheduler?.next === undefined ? undefined : `repeat:${schedulerId}:${scheduler.next}`;
    // The firings within a lead of now are queued beside the scheduler, under the ids it would give them.
    for (const firing of firingsBetween(schedule, now, now + CRON_LEAD_MS, 10)) {
      const [id] = schedulerFiringJobIds(cronJobId, firing);
      if (id === firstId) continue;
      const queued = await queue.getJob(id);
      expect({ id, scheduledFor: queued?.data.scheduledFor }).toEqual({ id, scheduledFor: firing });
      firings.push(firing);
      takenAt.push(firing);
    }
    let delayed = await delayedFiring(firstId);
    const jobScheduler = await queue.jobScheduler;
    while (delayed && firings.length < steps) {
      const firing = firingOf(delayed);
      firings.push(firing);
      // The worker takes the job when it is due, or later, and BullMQ makes the next firing then.
      // Taken that late after its job was due (a lead before the firing): BullMQ's next firing
      // comes after the firing plus that lateness, as it would have without the lead.
      const at = firing + lateness(firing, firings.length - 1);
      takenAt.push(at);
      vi.setSystemTime(at - CRON_LEAD_MS);
      const { job } = delayed;
      if (job.repeatJobKey === undefined) throw new Error(`the scheduler's job ${job.id} has no repeatJobKey`);
      const next = await jobScheduler.upsertJobScheduler(
        job.repeatJobKey,
        // The repeat options BullMQ stores on a scheduler's job (internal to its JobsOptions type).
        (job.opts as { repeat?: Omit<RepeatOptions, "key" | "prevMillis"> }).repeat ?? {},
        job.name,
        job.data,
        job.opts,
        { override: false, producerId: job.id },
      );
      delayed = await delayedFiring(next?.id);
    }
  } finally {
    vi.useRealTimers();
    await queue.removeJobScheduler(schedulerId);
  }
  return { firings, takenAt, refused: false };
}

/** Firings compared with the clock per case: the span ends at the last of them. */
const MAX_ENUMERATED = 100;

// ---------------------------------------------------------------------------------------------
// (e) The zone's clock, enumerated: which instants the expression names.

/** The expression's fields as sets, and whether a wall-clock time (ms of the local date and time as UTC) matches. */
function wallClockMatcher(expression: string) {
  const { fields } = CronExpressionParser.parse(expression, { strict: false });
  const set = (values: readonly (number | string)[]) =>
    new Set(values.filter((value): value is number => typeof value === "number"));
  const seconds = set(fields.second.values);
  const minutes = set(fields.minute.values);
  const hours = set(fields.hour.values);
  const monthDays = set(fields.dayOfMonth.values);
  const months = set(fields.month.values);
  const weekdays = new Set([...set(fields.dayOfWeek.values)].map((day) => day % 7));
  const anyMonthDay = fields.dayOfMonth.isWildcard;
  const anyWeekday = fields.dayOfWeek.isWildcard;
  return {
    /** Whether the expression fires only at second 0 (then minutes are enumerated, not seconds). */
    onMinutes: seconds.size === 1 && seconds.has(0),
    /** Whether it fires in every hour of the day (`*`, `0-23`, `*\/1`). */
    everyHour: hours.size === 24,
    matches(wall: number): boolean {
      const d = new Date(wall);
      if (!seconds.has(d.getUTCSeconds()) || !minutes.has(d.getUTCMinutes()) || !hours.has(d.getUTCHours())) {
        return false;
      }
      if (!months.has(d.getUTCMonth() + 1)) return false;
      const monthDay = monthDays.has(d.getUTCDate());
      const weekday = weekdays.has(d.getUTCDay());
      // As cron: with both day fields restricted either matches; with one `*`, the other decides.
      if (anyMonthDay && anyWeekday) return true;
      if (anyMonthDay) return weekday;
      if (anyWeekday) return monthDay;
      return monthDay || weekday;
    },
  };
}

/** What the zone's clock says of an expression over (from, to]. */
interface ClockTimes {
  /** Instants whose wall-clock time matches and comes once: each must fire. */
  once: number[];
  /** Matching wall-clock times a change repeats: their two instants. */
  repeated: [number, number][];
  /** The second instants of repeated times (also those whose first came before `from`). */
  repeatedSeconds: number[];
  /** Per change skipping matching times after `from`: the first such time at the moment it would have been by the clock before. */
  firstSkipped: { at: number; change: number }[];
  /** Every matching skipped time at that moment. */
  skipped: number[];
}

function clockTimes(expression: string, zone: string, from: number, to: number): ClockTimes {
  const matcher = wallClockMatcher(expression);
  const step = matcher.onMinutes ? 60_000 : 1_000;
  const changes = changesIn(zone);
  const times: ClockTimes = { once: [], repeated: [], repeatedSeconds: [], firstSkipped: [], skipped: [] };
  // Every instant on the step's grid: its wall-clock time, and whether a change repeats it.
  const repeatedWalls = changes
    .filter((change) => change.after < change.before)
    .map((change) => ({ change, from: change.at + change.after, to: change.at + change.before }));
  for (let at = Math.floor(from / step) * step + step; at <= to; at += step) {
    const wall = at + offsetFrom(zone, changes, at);
    if (!matcher.matches(wall)) continue;
    const repeat = repeatedWalls.find((r) => wall >= r.from && wall < r.to);
    if (repeat === undefined) times.once.push(at);
    else if (at < repeat.change.at) times.repeated.push([at, wall - repeat.change.after]);
    else times.repeatedSeconds.push(at);
  }
  /** Whether a time the clock shows comes between a change at or before `from` and `at` (then `at` does not fire). */
  const shownBefore = (at: number, change: Change) => {
    if (change.at > from) return false;
    for (let instant = change.at; instant < at; instant += step) {
      if (matcher.matches(instant + change.after)) return true;
    }
    return false;
  };
  for (const change of changes) {
    // A change just before `from` still has skipped times to come (at the moments they would have been).
    if (change.after <= change.before || change.at + change.after - change.before <= from || change.at > to) continue;
    let first = true;
    for (let wall = change.at + change.before; wall < change.at + change.after; wall += step) {
      if (!matcher.matches(wall)) continue;
      const at = wall - change.before;
      if (at > from) times.skipped.push(at);
      if (first && at > from && !shownBefore(at, change)) times.firstSkipped.push({ at, change: change.at });
      first = false;
    }
  }
  return times;
}

// ---------------------------------------------------------------------------------------------

describe("when a cron job fires: the preview, BullMQ's job scheduler, catch-up and nextFiring agree", () => {
  it("on random schedules, zones and windows, with workers on time and late", async () => {
    const property = fc.asyncProperty(
      caseArbitrary,
      between(1, 10),
      fc.array(
        fc.oneof(
          { arbitrary: fc.double({ min: 0, max: 0.999, noNaN: true }), weight: 4 },
          {
            arbitrary: fc.double({ min: 1, max: 3.5, noNaN: true }),
            weight: 1,
          },
        ),
        { minLength: 10, maxLength: 10 },
      ),
      async (testCase, count, lateShares) => {
        const { schedule, now } = testCase;
        const label = describeCase(testCase);

        // (a) what the preview shows, (d) nextFiring from each firing.
        const preview = nextFirings(schedule, now, count);
        const iterated: number[] = [];
        for (
          let at = nextFiring(schedule, now);
          at !== undefined && iterated.length < count;
          at = nextFiring(schedule, at)
        ) {
          iterated.push(at);
        }
        expect({ ...label, firings: isos(iterated) }).toEqual({ ...label, firings: isos(preview) });
        for (const firing of preview) {
          expect(firing).toBeGreaterThan(now);
          if (schedule.startAt !== null) expect(firing).toBeGreaterThanOrEqual(schedule.startAt);
          if (schedule.endAt !== null) expect(firing).toBeLessThanOrEqual(schedule.endAt);
        }

        // (c) what catch-up finds between two instants is the preview's firings between them.
        const last = preview.at(-1);
        if (last !== undefined) {
          expect(isos(firingsBetween(schedule, now, last, 1_000))).toEqual(isos(preview));
          const cut = Math.floor((now + last) / 2);
          expect(isos(firingsBetween(schedule, now, cut, 1_000))).toEqual(isos(preview.filter((at) => at <= cut)));
          expect(isos(firingsBetween(schedule, cut, last, 1_000))).toEqual(isos(preview.filter((at) => at > cut)));
          expect(isos(firingsBetween(schedule, now, last, 2))).toEqual(isos(preview.slice(0, 2)));
        }
        if (preview.length < count) {
          // The schedule ends: nothing after its last firing, however far catch-up looks.
          expect(firingsBetween(schedule, last ?? now, (last ?? now) + 400 * DAY, 10)).toEqual([]);
        }

        // (b) BullMQ, a worker taking each firing on time or late by a share of the gap to the
        // next firing (past it: BullMQ makes the first firing after the worker's clock, and the
        // ones in between are what catch-up finds).
        const lateness = (firing: number, step: number) => {
          const gap = (nextFiring(schedule, firing) ?? firing + 1_000) - firing;
          return Math.floor((lateShares[step] ?? 0) * gap);
        };
        const bullmq = await bullmqFirings(schedule, now, lateness, count);
        if (bullmq.refused) expect({ ...label, preview: isos(preview) }).toEqual({ ...label, preview: [] });
        const expected: number[] = [];
        const missed: number[] = [];
        let from = now;
        for (let step = 0; step < bullmq.firings.length + 1 && expected.length < count; step++) {
          const next = nextFiring(schedule, from);
          if (next === undefined) break;
          expected.push(next);
          const takenAt = bullmq.takenAt[step];
          if (takenAt === undefined) break;
          missed.push(...firingsBetween(schedule, next, takenAt, 1_000));
          from = Math.max(next, takenAt);
        }
        expect({ ...label, lateShares, firings: isos(bullmq.firings) }).toEqual({
          ...label,
          lateShares,
          firings: isos(expected.slice(0, count)),
        });
        // Every firing is either made by BullMQ or found by catch-up, in order, each once.
        const all = [...bullmq.firings, ...missed].sort((a, b) => a - b);
        expect({ ...label, lateShares, all: isos(all) }).toEqual({
          ...label,
          lateShares,
          all: isos(nextFirings(schedule, now, all.length)),
        });
      },
    );
    await check(property, RUNS);
  }, 60_000);
});

describe("the firings are the times the expression names on the zone's clock", () => {
  it("every time that comes once fires; a skipped one at the moment it would have been; a repeated one at least once", async () => {
    const property = fc.property(
      caseArbitrary.filter(({ schedule }) => schedule.expression !== null),
      ({ schedule, now }) => {
        const expression = schedule.expression as string;
        const matcher = wallClockMatcher(expression);
        // Enumerated over at most a few hours of seconds, or days of minutes.
        const span = matcher.onMinutes ? 3 * DAY : 4 * HOUR;
        const firings = nextFirings(schedule, now, MAX_ENUMERATED);
        const full = firings.length === MAX_ENUMERATED;
        const to = Math.min(now + span, full ? (firings.at(-1) as number) : Number.POSITIVE_INFINITY);
        const inWindow = (at: number) =>
          (schedule.startAt === null || at >= schedule.startAt) && (schedule.endAt === null || at <= schedule.endAt);
        const fired = new Set(firings.filter((at) => at <= to));
        // Searched from the window's opening when it is later: a change before it skips nothing of the window.
        const from = Math.max(now, (schedule.startAt ?? now) - 1);
        const clock = clockTimes(expression, schedule.timezone, from, to);
        const label = describeCase({ schedule, now });

        const named = new Set([...clock.once, ...clock.repeated.flat(), ...clock.repeatedSeconds, ...clock.skipped]);
        const once = new Set(clock.once);
        const shown = [...clock.once, ...clock.repeated.map(([first]) => first)].filter(inWindow);
        const skippedFirsts = clock.firstSkipped.filter(({ at }) => at <= to && inWindow(at));
        /** A time the clock shows between the change and the skipped time's moment comes instead. */
        const shownFirst = ({ at, change }: { at: number; change: number }) =>
          shown.some((instant) => instant >= change && instant < at);
        const repeated = clock.repeated.filter(
          ([first, second]) => second <= to && inWindow(first) && inWindow(second),
        );
        const problems = {
          timesThatComeOnceNotFired: clock.once.filter((at) => inWindow(at) && !fired.has(at)),
          firingsTheClockDoesNotName: [...fired].filter((at) => !named.has(at)),
          skippedTimesNotFired: skippedFirsts.filter((s) => !shownFirst(s) && !fired.has(s.at)).map((s) => s.at),
          skippedTimesFiredAfterAShownOne: skippedFirsts
            .filter((s) => shownFirst(s) && fired.has(s.at) && !once.has(s.at))
            .map((s) => s.at),
          repeatedTimesNotFiredAtTheirFirstInstant: repeated
            .filter(([first]) => !fired.has(first))
            .map(([first]) => first),
          repeatedTimesFiredTwiceByAnExpressionOfSomeHours: matcher.everyHour
            ? []
            : repeated.filter(([, second]) => fired.has(second)).map(([, second]) => second),
          repeatedTimesNotFiredAgainByAnExpressionOfEveryHour: matcher.everyHour
            ? repeated.filter(([, second]) => !fired.has(second)).map(([, second]) => second)
            : [],
        };
        const found = Object.entries(problems).filter(([, instants]) => instants.length > 0);
        if (found.length > 0) {
          const detail = Object.fromEntries(found.map(([name, instants]) => [name, isos(instants.slice(0, 6))]));
          throw new Error(JSON.stringify({ ...label, ...detail }, null, 2));
        }
      },
    );
    await check(property, RUNS);
  }, 60_000);
});

// ---------------------------------------------------------------------------------------------
// The rule across changes of the clocks, by example (docs/operations.md, "Cron jobs across daylight
// saving changes"): each example's firings, in UTC, from the preview, nextFiring, catch-up and
// BullMQ's job scheduler.

const PARIS = "Europe/Paris";
const NEW_YORK = "America/New_York";
const LORD_HOWE = "Australia/Lord_Howe";

interface Example {
  expression: string;
  timezone: string;
  /** The instant the firings are asked from. */
  after: string;
  /** The next firings, in UTC, with the wall-clock time they are at in a comment. */
  firings: string[];
}

const EXAMPLES: Record<string, Example[]> = {
  // Paris, Sunday March 28th 2027: 02:00 CET (01:00 UTC) becomes 03:00 CEST.
  "a time the change to summer time skips fires at the moment it would have been: 02:30 is 03:30": [
    {
      expression: "30 2 * * *",
      timezone: PARIS,
      after: "2027-03-27T12:00:00Z",
      firings: [
        "2027-03-28T01:30:00.000Z", // 03:30 CEST
        "2027-03-29T00:30:00.000Z", // 02:30 CEST
      ],
    },
    {
      expression: "0 30 2 * * *",
      timezone: PARIS,
      after: "2027-03-27T12:00:00Z",
      firings: ["2027-03-28T01:30:00.000Z", "2027-03-29T00:30:00.000Z"],
    },
    {
      expression: "15 30 2 * * *",
      timezone: PARIS,
      after: "2027-03-27T12:00:00Z",
      firings: [
        "2027-03-28T01:30:15.000Z", // 03:30:15 CEST
        "2027-03-29T00:30:15.000Z",
      ],
    },
    // New York, Sunday March 14th 2027: 02:00 EST (07:00 UTC) becomes 03:00 EDT.
    {
      expression: "30 2 * * *",
      timezone: NEW_YORK,
      after: "2027-03-13T12:00:00Z",
      firings: [
        "2027-03-14T07:30:00.000Z", // 03:30 EDT
        "2027-03-15T06:30:00.000Z", // 02:30 EDT
      ],
    },
    {
      expression: "45 30 2 * * *",
      timezone: NEW_YORK,
      after: "2027-03-13T12:00:00Z",
      firings: ["2027-03-14T07:30:45.000Z", "2027-03-15T06:30:45.000Z"],
    },
  ],
  "only the first time the change skips fires; the others of the skipped hour do not": [
    {
      expression: "15,45 2 * * *",
      timezone: PARIS,
      after: "2027-03-27T12:00:00Z",
      firings: [
        "2027-03-28T01:15:00.000Z", // 03:15 CEST (02:15); 02:45 does not fire
        "2027-03-29T00:15:00.000Z",
        "2027-03-29T00:45:00.000Z",
      ],
    },
    {
      expression: "*/20 * 2 * * *",
      timezone: PARIS,
      after: "2027-03-28T00:59:00Z",
      firings: [
        "2027-03-28T01:00:00.000Z", // 03:00:00 CEST (02:00:00)
        "2027-03-29T00:00:00.000Z",
      ],
    },
    // An expression of every hour keeps its rhythm: 01:00 CET, then 03:00 CEST.
    {
      expression: "0 * * * *",
      timezone: PARIS,
      after: "2027-03-27T23:30:00Z",
      firings: [
        "2027-03-28T00:00:00.000Z", // 01:00 CET
        "2027-03-28T01:00:00.000Z", // 03:00 CEST
        "2027-03-28T02:00:00.000Z", // 04:00 CEST
      ],
    },
  ],
  // Paris, Sunday October 31st 2027: 03:00 CEST (01:00 UTC) becomes 02:00 CET; 02:00 to 03:00 comes twice.
  "a time the change to winter time repeats fires once, the first time": [
    {
      expression: "30 2 * * *",
      timezone: PARIS,
      after: "2027-10-30T12:00:00Z",
      firings: [
        "2027-10-31T00:30:00.000Z", // 02:30 CEST; not again at 02:30 CET
        "2027-11-01T01:30:00.000Z", // 02:30 CET
      ],
    },
    {
      expression: "0 30 2 * * *",
      timezone: PARIS,
      after: "2027-10-30T12:00:00Z",
      firings: ["2027-10-31T00:30:00.000Z", "2027-11-01T01:30:00.000Z"],
    },
    {
      expression: "15 30 2 * * *",
      timezone: PARIS,
      after: "2027-10-30T12:00:00Z",
      firings: ["2027-10-31T00:30:15.000Z", "2027-11-01T01:30:15.000Z"],
    },
    {
      expression: "*/30 2 * * *",
      timezone: PARIS,
      after: "2027-10-30T23:00:00Z",
      firings: [
        "2027-10-31T00:00:00.000Z", // 02:00 CEST
        "2027-10-31T00:30:00.000Z", // 02:30 CEST
        "2027-11-01T01:00:00.000Z", // 02:00 CET, the next day
      ],
    },
    // New York, Sunday November 7th 2027: 02:00 EDT (06:00 UTC) becomes 01:00 EST; 01:00 to 02:00 comes twice.
    {
      expression: "30 1 * * *",
      timezone: NEW_YORK,
      after: "2027-11-06T12:00:00Z",
      firings: [
        "2027-11-07T05:30:00.000Z", // 01:30 EDT; not again at 01:30 EST
        "2027-11-08T06:30:00.000Z", // 01:30 EST
      ],
    },
    {
      expression: "45 30 1 * * *",
      timezone: NEW_YORK,
      after: "2027-11-06T12:00:00Z",
      firings: ["2027-11-07T05:30:45.000Z", "2027-11-08T06:30:45.000Z"],
    },
    // 02:30 is not repeated in New York (01:00 to 02:00 is): once, in EST.
    {
      expression: "30 2 * * *",
      timezone: NEW_YORK,
      after: "2027-11-06T12:00:00Z",
      firings: [
        "2027-11-07T07:30:00.000Z", // 02:30 EST
        "2027-11-08T07:30:00.000Z",
      ],
    },
  ],
  "an expression of every hour goes on by elapsed time through the repeated hour": [
    {
      expression: "0 * * * *",
      timezone: PARIS,
      after: "2027-10-30T23:30:00Z",
      firings: [
        "2027-10-31T00:00:00.000Z", // 02:00 CEST
        "2027-10-31T01:00:00.000Z", // 02:00 CET
        "2027-10-31T02:00:00.000Z", // 03:00 CET
      ],
    },
    {
      expression: "0 */30 * * * *",
      timezone: NEW_YORK,
      after: "2027-11-07T04:45:00Z",
      firings: [
        "2027-11-07T05:00:00.000Z", // 01:00 EDT
        "2027-11-07T05:30:00.000Z", // 01:30 EDT
        "2027-11-07T06:00:00.000Z", // 01:00 EST
        "2027-11-07T06:30:00.000Z", // 01:30 EST
        "2027-11-07T07:00:00.000Z", // 02:00 EST
      ],
    },
  ],
  // Lord Howe Island, Sunday October 3rd 2027: 02:00 (+10:30, 15:30 UTC) becomes 02:30 (+11); Sunday
  // April 4th 2027: 02:00 (+11, 15:00 UTC) becomes 01:30 (+10:30).
  "the same rules across a change of half an hour": [
    {
      expression: "15 2 * * *",
      timezone: LORD_HOWE,
      after: "2027-10-02T12:00:00Z",
      firings: [
        "2027-10-02T15:45:00.000Z", // 02:45 (+11): 02:15 by the clock before
        "2027-10-03T15:15:00.000Z",
      ],
    },
    {
      expression: "30 15 2 * * *",
      timezone: LORD_HOWE,
      after: "2027-10-02T12:00:00Z",
      firings: ["2027-10-02T15:45:30.000Z", "2027-10-03T15:15:30.000Z"],
    },
    // 02:30 is on the clock, before 02:15's moment (02:45): it fires, and 02:15 does not.
    {
      expression: "15,30 2 * * *",
      timezone: LORD_HOWE,
      after: "2027-10-02T12:00:00Z",
      firings: [
        "2027-10-02T15:30:00.000Z", // 02:30 (+11)
        "2027-10-03T15:15:00.000Z",
      ],
    },
    {
      expression: "45 1 * * *",
      timezone: LORD_HOWE,
      after: "2027-04-03T12:00:00Z",
      firings: [
        "2027-04-03T14:45:00.000Z", // 01:45 (+11); not again at 01:45 (+10:30)
        "2027-04-04T15:15:00.000Z",
      ],
    },
    {
      expression: "0 */15 * * * *",
      timezone: LORD_HOWE,
      after: "2027-04-03T14:20:00Z",
      firings: [
        "2027-04-03T14:30:00.000Z", // 01:30 (+11)
        "2027-04-03T14:45:00.000Z", // 01:45 (+11)
        "2027-04-03T15:00:00.000Z", // 01:30 (+10:30)
        "2027-04-03T15:15:00.000Z", // 01:45 (+10:30)
        "2027-04-03T15:30:00.000Z", // 02:00 (+10:30)
      ],
    },
  ],
};

describe("across daylight saving changes", () => {
  for (const [rule, examples] of Object.entries(EXAMPLES)) {
    it(rule, async () => {
      for (const { expression, timezone, after, firings } of examples) {
        const schedule: Schedule = {
          expression,
          timezone,
          everyMs: null,
          firstAt: null,
          startAt: null,
          endAt: null,
        };
        const from = Date.parse(after);
        const label = { expression, timezone, after };
        expect({ ...label, preview: isos(nextFirings(schedule, from, firings.length)) }).toEqual({
          ...label,
          preview: firings,
        });
        const last = Date.parse(firings.at(-1) as string);
        expect({ ...label, catchUp: isos(firingsBetween(schedule, from, last, 100)) }).toEqual({
          ...label,
          catchUp: firings,
        });
        const { firings: bullmq } = await bullmqFirings(schedule, from, () => 0, firings.length);
        expect({ ...label, bullmq: isos(bullmq) }).toEqual({ ...label, bullmq: firings });
      }
    });
  }

  it("an interval is a fixed length of time, whatever the clocks do: P1D from 09:00 CET is 10:00 CEST after the change", async () => {
    const firstAt = Date.parse("2027-03-27T08:00:00Z"); // 09:00 CET
    const schedule: Schedule = {
      expression: null,
      timezone: PARIS,
      everyMs: DAY,
      firstAt,
      startAt: null,
      endAt: null,
    };
    const firings = ["2027-03-27T08:00:00.000Z", "2027-03-28T08:00:00.000Z", "2027-03-29T08:00:00.000Z"];
    expect(isos(nextFirings(schedule, firstAt - 1, 3))).toEqual(firings);
    expect(isos((await bullmqFirings(schedule, firstAt - 1, () => 0, 3)).firings)).toEqual(firings);
  });
});

// A schedule with no firing left, put on a job scheduler: nextFiring says none, and so does BullMQ.
// On its own, BullMQ 6.7 refuses an endDate already past, and an upsert whose strategy finds no next
// firing leaves the scheduler already there firing by its previous schedule: createCronJobSchedulers
// removes the scheduler instead.
describe("a schedule with no firing left, on a job scheduler", () => {
  const cronJob = (expression: string, endAt: number | null): Schedule => ({
    expression,
    timezone: "UTC",
    everyMs: null,
    firstAt: null,
    startAt: null,
    endAt,
  });

  it("takes the job's scheduler off when an edit leaves no firing", async () => {
    const schedulers = createCronJobSchedulers(queue);
    const now = Date.now();
    await schedulers.schedule("edited", cronJob("0 0 * * *", null));
    // The window now closes before the next midnight: nothing is left to fire.
    const edited = cronJob("0 0 * * *", now + 60_000);
    expect(nextFiring(edited, now)).toBeUndefined();
    try {
      await schedulers.schedule("edited", edited);
      expect(await queue.getJobScheduler(cronSchedulerId("edited"))).toBeUndefined();
    } finally {
      await schedulers.unschedule("edited");
    }
  });

  it("is accepted, with no firing, when its window has already closed", async () => {
    const schedulers = createCronJobSchedulers(queue);
    const ended = cronJob("* * * * *", Date.now() - 60_000);
    try {
      await schedulers.schedule("ended", ended);
      expect(await queue.getJobScheduler(cronSchedulerId("ended"))).toBeUndefined();
    } finally {
      await schedulers.unschedule("ended");
    }
  });
});
