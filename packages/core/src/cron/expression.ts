import { CronExpressionParser, type CronFieldCollection } from "cron-parser";
import { cronDays } from "./cron-days.ts";
import { nextRunOf } from "./next-run.ts";

// Cron expressions: five fields (minute hour day-of-month month day-of-week), or six with seconds
// first (contract §10.4), with ranges, lists, steps and names. Whether one ever fires is decided from its fields (cron-days.ts); its next
// runs are the times BullMQ's job schedulers fire it at, found in bounded work (next-run.ts).

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

/** Five standard fields (six with seconds first) with names only where they belong, else undefined. */
function standardFields(expression: string): string[] | undefined {
  const fields = expression.trim().split(/\s+/);
  if ((fields.length !== 5 && fields.length !== 6) || !fields.every((field) => STANDARD_FIELD.test(field))) {
    return undefined;
  }
  // The seconds field, when there is one, takes no names.
  const namesAllowed = fields.length === 6 ? [[], ...NAMES_BY_FIELD] : NAMES_BY_FIELD;
  const names = (field: string) => field.match(/[A-Za-z]+/g) ?? [];
  if (fields.some((field, i) => names(field).some((name) => !namesAllowed[i]?.includes(name.toUpperCase())))) {
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

/** True when the expression is five (or six) standard fields that cron-parser accepts. */
export function isValidCronExpression(expression: string): boolean {
  const fields = standardFields(expression);
  return fields !== undefined && parses(fields.join(" "));
}

/**
 * What an expression is, judged once: not a valid expression; well formed but matching no date
 * (`neverFires`); or one that fires. `expression` is the text as stored (normalized spacing).
 */
export type CronExpressionCheck =
  | { kind: "invalid" }
  | { kind: "neverFires"; expression: string }
  | { kind: "fires"; expression: string };

/**
 * Judges an expression without iterating: one parse, then the day fields against each other. An
 * expression never fires when it is well formed field by field but no date matches its day and
 * month fields: a day of the month that none of its months has (`0 0 31 4,6 *`, or `0 0 30 2 *`,
 * which cron-parser refuses as a whole). A restricted day of the week makes it fire on those days
 * (`0 0 30 2 MON`), as in every cron; February 29th fires in leap years.
 */
export function checkCronExpression(text: string): CronExpressionCheck {
  const fields = standardFields(text);
  if (fields === undefined) return { kind: "invalid" };
  const expression = fields.join(" ");
  let parsed: CronFieldCollection;
  try {
    parsed = CronExpressionParser.parse(expression, { strict: false }).fields;
  } catch {
    // cron-parser refuses a whole only for a single month none of whose days is listed while the
    // day of the week is `*`; with each field valid on its own (a day of the week given instead of
    // `*` skips that rule) it is an expression that never fires.
    const [minute, hour, dayOfMonth, month, dayOfWeek] = fields.slice(-5);
    const second = fields.length === 6 ? fields[0] : "0";
    const alone = parses(`${second} ${minute} ${hour} ${dayOfMonth} ${month} 0`) && parses(`0 0 * * ${dayOfWeek}`);
    return alone ? { kind: "neverFires", expression } : { kind: "invalid" };
  }
  return cronDays(parsed)?.neverMatches ? { kind: "neverFires", expression } : { kind: "fires", expression };
}

/** True for a well-formed expression that matches no date at all (see checkCronExpression). */
export function cronExpressionNeverFires(expression: string): boolean {
  return checkCronExpression(expression).kind === "neverFires";
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
  return cronRuns(expression, timezone)(after);
}

/**
 * The next `count` times strictly after `after` at which the expression matches in `timezone`,
 * oldest first; fewer (none for an expression that never fires) when it stops matching. Each is
 * `nextCronRun` of the one before, so a preview shows exactly the times the job would fire at.
 */
export function nextCronRuns(expression: string, timezone: string, after: Date, count: number): Date[] {
  const next = cronRuns(expression, timezone);
  const times: Date[] = [];
  let previous = after;
  while (times.length < count) {
    const time = next(previous);
    if (time === undefined) break;
    times.push(time);
    previous = time;
  }
  return times;
}

/** The next-run function of an expression in a zone, parsed once (see next-run.ts). */
function cronRuns(expression: string, timezone: string): (after: Date) => Date | undefined {
  let fields: CronFieldCollection;
  try {
    fields = CronExpressionParser.parse(expression, { strict: false }).fields;
  } catch (error) {
    if (checkCronExpression(expression).kind === "neverFires") return () => undefined;
    throw error;
  }
  return nextRunOf(fields, timezone);
}
