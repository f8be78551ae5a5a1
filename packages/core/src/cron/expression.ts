import { getNextMillis } from "bullmq";
import { CronExpressionParser } from "cron-parser";

// Cron expressions of contract §4: exactly five fields (minute hour day-of-month month day-of-week)
// with ranges, lists, steps and names. The next run is computed by BullMQ's own function (the one
// its job schedulers fire by), so the date shown to clients and the firing can never disagree.

export const INVALID_EXPRESSION = "Please enter a valid cron expression";
export const INVALID_TIMEZONE = "Please enter a valid timezone";
/** Why a well-formed expression that matches no date at all (`0 0 30 2 *`) is refused. */
export const cronNeverFires = (expression: string) => `Cron expression never fires: ${expression}`;

/** Characters of a standard field: digits, names, `*`, `,`, `-`, `/`. No `L`, `W`, `#` or `?`. */
const STANDARD_FIELD = /^[0-9A-Za-z*,/-]+$/;

/**
 * The names each field may use: months in the month field, days in the day-of-week field, none
 * elsewhere. cron-parser maps any name to its number in any field (`* * * SAT *` would run daily in
 * June, `* * * * JAN` on Mondays), so the field is checked here.
 */
const NAMES_BY_FIELD: readonly (readonly string[])[] = [
  [],
  [],
  [],
  ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"],
  ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
];

/** Five standard fields with names only where they belong, else undefined. */
function standardFields(expression: string): string[] | undefined {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5 || !fields.every((field) => STANDARD_FIELD.test(field))) return undefined;
  const names = (field: string) => field.match(/[A-Za-z]+/g) ?? [];
  if (fields.some((field, i) => names(field).some((name) => !NAMES_BY_FIELD[i]?.includes(name.toUpperCase())))) {
    return undefined;
  }
  // Names are words of three letters (JAN, MON); cron-parser would also take some other letters.
  if (
    fields.some((field) => /[A-Za-z]/.test(field) && !/^([A-Za-z]{3}|[0-9*]+)([,/-]([A-Za-z]{3}|[0-9]+))*$/.test(field))
  ) {
    return undefined;
  }
  return fields;
}

const parses = (expression: string) => {
  try {
    CronExpressionParser.parse(expression, { strict: false });
    return true;
  } catch {
    return false;
  }
};

/** True when the expression is five standard fields that cron-parser accepts. */
export function isValidCronExpression(expression: string): boolean {
  const fields = standardFields(expression);
  return fields !== undefined && parses(fields.join(" "));
}

/**
 * True for an expression that is well formed field by field but matches no date: a day of the
 * month that none of its months has (`0 0 30 2 *`, which cron-parser refuses as a whole, or
 * `0 0 31 4,6 *`, which it accepts but never matches). A day of the week in the expression makes
 * it fire on those days (`0 0 30 2 MON`), as in every cron.
 */
export function cronExpressionNeverFires(expression: string): boolean {
  const fields = standardFields(expression);
  if (fields === undefined) return false;
  const [minute, hour, dayOfMonth, month, dayOfWeek] = fields;
  // Each field is valid on its own: the whole is refused only for the day and month together.
  const alone = [`${minute} ${hour} * * *`, `0 0 ${dayOfMonth} * *`, `0 0 * ${month} *`, `0 0 * * ${dayOfWeek}`];
  if (!alone.every(parses)) return false;
  const whole = fields.join(" ");
  if (!parses(whole)) return true;
  try {
    return nextCronRun(whole, "UTC", new Date()) === undefined;
  } catch {
    return true;
  }
}

/** The expression as stored: fields separated by single spaces. */
export function normalizeCronExpression(expression: string): string {
  return expression.trim().split(/\s+/).join(" ");
}

/** True for an IANA time zone name this runtime knows (e.g. `Europe/Paris`, `UTC`). */
export function isValidTimezone(timezone: string): boolean {
  if (timezone.trim() === "" || timezone !== timezone.trim()) return false;
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    CronExpressionParser.parse("* * * * *", { tz: timezone });
    return true;
  } catch {
    return false;
  }
}

/** The first time strictly after `after` at which the expression matches in `timezone`. */
export function nextCronRun(expression: string, timezone: string, after: Date): Date | undefined {
  const millis = getNextMillis(after.getTime(), { pattern: expression, tz: timezone });
  return millis === undefined ? undefined : new Date(millis);
}

/**
 * The next `count` times strictly after `after` at which the expression matches in `timezone`,
 * oldest first; fewer (none for an expression that never fires) when it stops matching. Each is
 * `nextCronRun` of the one before, so a preview shows exactly the times the job would fire at.
 */
export function nextCronRuns(expression: string, timezone: string, after: Date, count: number): Date[] {
  const times: Date[] = [];
  let previous = after;
  while (times.length < count) {
    const next = nextCronRun(expression, timezone, previous);
    if (next === undefined) break;
    times.push(next);
    previous = next;
  }
  return times;
}
