import { CronDate, CronExpression, type CronFieldCollection } from "cron-parser";
import { type CalendarDate, type CronDays, cronDays, dayAfter, dayBefore } from "./cron-days.ts";

// The next run of a parsed expression in a zone: what BullMQ's job schedulers fire by
// (`getNextMillis(after, { pattern, tz })`, one search of cron-parser), in work that does not grow
// with how far away the run is. A test compares the two on random expressions, zones and instants.
//
// cron-parser walks the calendar one step per unmatched month, day or hour, each step a few luxon
// operations in the zone: a run four years away (February 29th) costs hundreds of steps, one that
// never comes its loop limit of 10,000 (about 85 ms of CPU). Here:
//
// - Away from changes of the zone's clocks, the wall clock maps to instants by one UTC offset, so
//   the run is the first wall-clock time after `after`'s that the fields match (arithmetic on the
//   fields' values, seconds included), at that offset. Offsets a day before and after `after` and
//   the run, equal to theirs, say no change is near.
// - Near a change, cron-parser's own search decides (it has its rules for skipped and repeated
//   hours), bounded to two days (`endDate`); when it finds nothing there, it resumes at the start
//   of the next day the day fields select, which is where the unbounded search arrives next.
// - Near a change of half an hour (Lord Howe Island), cron-parser's hour steps go back and forth
//   until its loop limit, and BullMQ gets no run at all; the wall clock decides there too, by the
//   same rules (`wallClockRun`; docs/operations.md, "Cron jobs across daylight saving changes").
//   A test enumerates the zones' clocks second by second against both.
// - Where cron-parser's answer depends on the instant it is asked from, the runs stay one set of
//   instants whatever the search starts from: a time the clocks skip is still found from between
//   the change and the moment it fires at, and a time they repeat fires once (not again when asked
//   from between its two instants: cron-parser would).

const HOUR_MS = 3_600_000;
/** More than a day in any zone (days are 23 to 25 hours): how far a change is looked for. */
const NEAR_MS = 26 * HOUR_MS;
/** How far one search of cron-parser may go: a few dozen of its steps at most. */
const SEARCH_WINDOW_MS = 48 * HOUR_MS;
/**
 * Searches one run may take: from `after`, then from the start of the next day the expression may
 * fire on; more only when such a day turns out to have no time at all (daylight saving gaps).
 */
const MAX_SEARCHES = 8;

/** The next-run function of parsed fields in a zone: the first run strictly after `after`. */
export function nextRunOf(fields: CronFieldCollection, timezone: string): (after: Date) => Date | undefined {
  const days = cronDays(fields);
  if (days?.neverMatches) return () => undefined;
  const search = (from: number, to?: number): number | undefined => {
    try {
      const options = { tz: timezone, currentDate: new Date(from) };
      const expression = new CronExpression(fields, to === undefined ? options : { ...options, endDate: new Date(to) });
      return expression.next().getTime();
    } catch {
      // Past `endDate`, or cron-parser's own loop limit: no time in the window.
      return undefined;
    }
  };
  // `L` and `#` (never in the five standard fields) are left to cron-parser, as BullMQ does.
  if (days === undefined) return (after) => optionalDate(search(after.getTime()));

  const offsets = zoneOffsets(timezone);
  const wallClock = wallClockRuns(fields, days);
  const everyHour = new Set(fields.hour.values).size === 24;
  const near = (millis: number) => {
    const offset = offsets.at(millis);
    return offsets.at(millis - NEAR_MS) === offset && offsets.at(millis + NEAR_MS) === offset ? offset : undefined;
  };

  const firstRun = (from: number): Date | undefined => {
    const offset = near(from);
    if (offset !== undefined) {
      const wall = wallClock(from + offset);
      // At `after`'s offset first; a run across a change (summer to winter) is at its own offset.
      const runOffset = wall === undefined ? undefined : near(wall - offset);
      if (wall !== undefined && runOffset !== undefined && near(wall - runOffset) === runOffset) {
        return new Date(wall - runOffset);
      }
    }
    // cron-parser cannot step hours across a change of half an hour: those runs go by the clock.
    if (!wholeHourChanges(offsets, from)) return optionalDate(wallClockRun(wallClock, offsets, from, everyHour));
    return boundedSearch(fields, days, timezone, search, from);
  };
  return (after) => {
    const from = after.getTime();
    let run = firstRun(from);
    // A time the clocks skip fires at the moment it would have been by the clock before, which is
    // after the change: asked from between the change and that moment, it is still to come (and
    // cron-parser, asked from just before the change, can step over it).
    const change = changeForwardNear(offsets, from);
    const inGap = change !== undefined && from >= change - 1_000 && from < change + GAP_MS;
    const skipped = inGap ? firstRun(change - 1_000) : undefined;
    if (skipped !== undefined && skipped.getTime() > from && (run === undefined || skipped < run)) run = skipped;
    const first = run === undefined ? undefined : firstInstant(offsets, run.getTime());
    if (run === undefined || first === undefined) return run;
    // `run` is the second instant of a time the clocks repeat. A repeated time fires at its first
    // instant, whatever instant the search starts from: cron-parser, entering a day whose midnight
    // repeats (Havana), can step over the first; asked from between the two, it fires the time again.
    if (first.at > from) return new Date(first.at);
    return everyHour ? run : firstRun(first.repeatedUntil - 1);
  };
}

/** The first instant of a change of the clocks forward less than AROUND_MS from `millis`, if any. */
function changeForwardNear(offsets: ZoneOffsets, millis: number): number | undefined {
  const [earlier, offset, later] = [millis - AROUND_MS, millis, millis + AROUND_MS].map((at) => offsets.at(at)) as [
    number,
    number,
    number,
  ];
  if (earlier < offset) return changeAt(offsets, millis - AROUND_MS, millis);
  if (offset < later) return changeAt(offsets, millis, millis + AROUND_MS);
  return undefined;
}

/**
 * When `millis` is the second instant of a wall-clock time a change of the clocks repeats (winter
 * time begins: 01:00 to 02:00 comes twice), the time's first instant and the first instant after
 * the repeated times; otherwise undefined.
 */
function firstInstant(offsets: ZoneOffsets, millis: number): { at: number; repeatedUntil: number } | undefined {
  const before = offsets.at(millis - AROUND_MS);
  const offset = offsets.at(millis);
  const at = millis + offset - before;
  if (before <= offset || offsets.at(at) !== before) return undefined;
  return { at, repeatedUntil: changeAt(offsets, millis - AROUND_MS, millis) + (before - offset) };
}

/** Whether the zone's clocks change by whole hours only (if at all) in the year of `millis`. */
function wholeHourChanges(offsets: ZoneOffsets, millis: number): boolean {
  const year = new Date(millis).getUTCFullYear();
  const [january, july] = [Date.UTC(year, 0, 1), Date.UTC(year, 6, 1)].map((instant) => offsets.at(instant));
  const near = [millis - NEAR_MS, millis + NEAR_MS].map((instant) => offsets.at(instant));
  return (
    ((january as number) - (july as number)) % HOUR_MS === 0 &&
    ((near[0] as number) - (near[1] as number)) % HOUR_MS === 0
  );
}

/** Longer than any change of the clocks forward (two hours at Troll in Antarctica). */
const GAP_MS = 3 * HOUR_MS;

/** Farther than the instants of a wall-clock time can be from it (UTC offsets stay within 14 hours), plus a day. */
const AROUND_MS = 40 * HOUR_MS;

/**
 * The first instant after `from` whose wall-clock time the fields match, across a change of the
 * zone's clocks, by the rules cron-parser follows across changes of a whole hour:
 *
 * - The first time a change skips comes at the moment it would have been by the clock before it
 *   (02:15 on a 02:00 to 02:30 change is 02:45), unless a time the clock does show comes before
 *   that moment (02:30 on that change, for `15,30 2 * * *`); the other times it skips do not come.
 * - A time a change repeats comes once, at its first instant after `from` (`nextRunOf` then drops
 *   a second instant whose first came before `from`); an expression that fires every hour of the
 *   day goes on by elapsed time through the repeated times instead (both instants).
 */
function wallClockRun(
  wallClock: (wall: number) => number | undefined,
  offsets: ZoneOffsets,
  from: number,
  everyHour: boolean,
): number | undefined {
  const current = offsets.at(from);
  const run = walkFrom(wallClock, offsets, from, current);
  const later = offsets.at(from + AROUND_MS);
  if (!everyHour || later >= current) return run;
  // The clocks go back ahead: the times they repeat come again, by the clock after the change.
  const again = walkFrom(wallClock, offsets, changeAt(offsets, from, from + AROUND_MS) - 1, later);
  return run === undefined || again === undefined ? (run ?? again) : Math.min(run, again);
}

/** The first run after `from` found by walking the wall clock from `from` read at `offset`. */
function walkFrom(
  wallClock: (wall: number) => number | undefined,
  offsets: ZoneOffsets,
  from: number,
  offset: number,
): number | undefined {
  let wall = from + offset;
  /** The first skipped time met, at the moment it would have been. */
  let skipped: number | undefined;
  // A wall-clock time already past (repeated after `from`'s) gives way to the next one.
  for (let tries = 0; tries < 4; tries++) {
    const next = wallClock(wall);
    if (next === undefined) return skipped;
    const before = offsets.at(next - AROUND_MS);
    const after = offsets.at(next + AROUND_MS);
    const instants = [next - before, next - after].filter((instant) => offsets.at(instant) === next - instant);
    if (instants.length === 0) {
      if (skipped !== undefined) return skipped;
      skipped = next - before;
      // On from the end of the skipped times: a time the clock shows before that moment comes first.
      wall = changeAt(offsets, next - after, next - before) + after - 1;
      continue;
    }
    const first = Math.min(...instants.filter((instant) => instant > from));
    if (first !== Number.POSITIVE_INFINITY) return skipped === undefined ? first : Math.min(first, skipped);
    wall = next;
  }
  return skipped;
}

/** The instant the zone's offset changes between `low` and `high` (the first second at the new offset). */
function changeAt(offsets: ZoneOffsets, low: number, high: number): number {
  const before = offsets.at(low);
  // On whole seconds, as the clocks change: the answer is the change's own instant.
  let [lo, hi] = [Math.floor(low / 1_000) * 1_000, high];
  while (hi - lo > 1_000) {
    const middle = lo + Math.max(1, Math.floor((hi - lo) / 2_000)) * 1_000;
    if (offsets.at(middle) === before) lo = middle;
    else hi = middle;
  }
  return hi;
}

const optionalDate = (millis: number | undefined) => (millis === undefined ? undefined : new Date(millis));

/**
 * The first wall-clock time strictly after a wall-clock time (both as UTC milliseconds of the
 * local date and time) that the fields match, seconds included (six fields; five fire at second 0).
 */
function wallClockRuns(fields: CronFieldCollection, days: CronDays): (wall: number) => number | undefined {
  const numbers = (values: readonly (number | string)[]) =>
    values.filter((value): value is number => typeof value === "number").sort((a, b) => a - b);
  const seconds = numbers(fields.second.values);
  const hours = numbers(fields.hour.values);
  const minutes = numbers(fields.minute.values);
  const firstHour = hours[0] as number;
  const firstMinute = minutes[0] as number;
  const firstSecond = seconds[0] as number;
  const at = (date: CalendarDate, hour: number, minute: number, second: number) =>
    Date.UTC(date.year, date.month - 1, date.day, hour, minute, second);
  return (wall) => {
    const now = new Date(wall);
    const today = { year: now.getUTCFullYear(), month: now.getUTCMonth() + 1, day: now.getUTCDate() };
    if (days.matches(today)) {
      const hour = now.getUTCHours();
      const minute = now.getUTCMinutes();
      // A later second of this minute, else a later minute of this hour, else a later hour.
      if (hours.includes(hour) && minutes.includes(minute)) {
        const second = seconds.find((s) => s > now.getUTCSeconds());
        if (second !== undefined) return at(today, hour, minute, second);
      }
      const laterMinute = hours.includes(hour) ? minutes.find((m) => m > minute) : undefined;
      if (laterMinute !== undefined) return at(today, hour, laterMinute, firstSecond);
      const later = hours.find((h) => h > hour);
      if (later !== undefined) return at(today, later, firstMinute, firstSecond);
    }
    const next = days.firstFrom(dayAfter(today));
    return next === undefined ? undefined : at(next, firstHour, firstMinute, firstSecond);
  };
}

/**
 * cron-parser's search from `from` in windows of two days:
 *
 * 1. A search with `endDate` walks the unbounded search's path and stops at the end of the window.
 * 2. With nothing found, the next day the day fields select (`firstFrom`) is where the unbounded
 *    search arrives next: it steps over unselected days and months to their start (luxon's
 *    `startOf`), carrying no daylight saving state. The search resumes from that day's start,
 *    entered the same way (`resumeAt`).
 */
function boundedSearch(
  fields: CronFieldCollection,
  days: CronDays,
  timezone: string,
  search: (from: number, to?: number) => number | undefined,
  after: number,
): Date | undefined {
  let from = after;
  let to = from + SEARCH_WINDOW_MS;
  for (let searches = 0; searches < MAX_SEARCHES; searches++) {
    const found = search(from, to);
    if (found !== undefined) return new Date(found);
    const day = days.firstFrom(localDate(to, timezone));
    if (day === undefined) return undefined;
    const start = startOfDay(day, timezone);
    // A date the zone skipped (Samoa's December 30th, 2011): left to cron-parser.
    if (start === undefined) return optionalDate(search(from));
    // The day before is selected too (it ends the window): the search enters `day` from that day's
    // last hour rather than by stepping over days, so it walks there itself.
    if (start <= from || days.matches(dayBefore(day))) {
      to = Math.max(to, start) + SEARCH_WINDOW_MS;
      continue;
    }
    const resumed = resumeAt(fields, timezone, start);
    if (resumed.found) return new Date(start);
    from = resumed.from;
    to = from + SEARCH_WINDOW_MS;
  }
  return undefined;
}

/**
 * How a fresh search continues as cron-parser does on arriving at `start` (a day's first instant)
 * by stepping over days: with no daylight saving state. A search from 1 ms before steps one second
 * forward onto `start`, the same arrival when the second before `start` is 23:59:59 of the day
 * before at the same UTC offset. When the day begins in a daylight saving change (midnight skipped,
 * 01:00 first), that step would count as crossing the gap, so `start` is checked on its own
 * (`found`) and otherwise the search starts at `start` itself, which it never answers.
 */
function resumeAt(fields: CronFieldCollection, timezone: string, start: number): { found: boolean; from: number } {
  const first = new CronDate(start, timezone);
  const midnight = first.getHours() === 0 && first.getMinutes() === 0 && first.getSeconds() === 0;
  if (midnight && new CronDate(start - 1_000, timezone).getUTCOffset() === first.getUTCOffset()) {
    return { found: false, from: start - 1 };
  }
  const found = new CronExpression(fields, { tz: timezone }).includesDate(new Date(start));
  return { found, from: start };
}

/** The calendar date at an instant in a zone. */
function localDate(millis: number, timezone: string): CalendarDate {
  const date = new CronDate(millis, timezone);
  return { year: date.getFullYear(), month: date.getMonth() + 1, day: date.getDate() };
}

/**
 * The first instant of a date in a zone, as cron-parser steps onto it (luxon's `startOf("day")`),
 * from an instant within the date: UTC offsets run from -12 to +14 hours, so noon or midnight UTC of
 * the same date is one. Undefined for a date the zone skipped.
 */
function startOfDay(day: CalendarDate, timezone: string): number | undefined {
  const noon = Date.UTC(day.year, day.month - 1, day.day, 12);
  for (const instant of [noon, noon - 12 * HOUR_MS]) {
    const date = new CronDate(instant, timezone);
    if (date.getFullYear() === day.year && date.getMonth() + 1 === day.month && date.getDate() === day.day) {
      date.setStartOfDay();
      return date.getTime();
    }
  }
  return undefined;
}

/**
 * A zone's UTC offsets (ms to add to an instant for its wall clock), from the same Intl data luxon
 * reads for cron-parser. One formatter per zone name, kept: names are checked against the runtime's
 * zones before they get here, and the cache is emptied past a bound (names are case-insensitive).
 */
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATTERS = 1_000;

interface ZoneOffsets {
  at(millis: number): number;
}

function zoneOffsets(timezone: string): ZoneOffsets {
  let format = formatters.get(timezone);
  if (format === undefined) {
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: timezone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(timezone, format);
  }
  const formatter = format;
  // A run's instant is looked at again as the next run's `after`.
  const known = new Map<number, number>();
  return {
    at(millis) {
      const cached = known.get(millis);
      if (cached !== undefined) return cached;
      const part: Record<string, number> = {};
      for (const { type, value } of formatter.formatToParts(millis)) part[type] = Number(value);
      const wall = Date.UTC(part.year ?? 0, (part.month ?? 1) - 1, part.day ?? 1, part.hour, part.minute, part.second);
      const offset = wall - (millis - (((millis % 1_000) + 1_000) % 1_000));
      if (known.size > 64) known.clear();
      known.set(millis, offset);
      return offset;
    },
  };
}
