// A time axis that spans the data it shows: uPlot's own picks a range and tick format from the
// scale alone, so runs close together (or a single one) drew a one-minute axis labelled
// ":00 :05 … :00". Times here are in seconds since the epoch, as uPlot's time scales take them.

const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Steps between ticks, smallest first; each starts at a round time of the browser's zone. */
const STEPS = [
  1,
  2,
  5,
  10,
  15,
  30,
  MINUTE,
  2 * MINUTE,
  5 * MINUTE,
  10 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  HOUR,
  2 * HOUR,
  3 * HOUR,
  6 * HOUR,
  12 * HOUR,
  DAY,
  2 * DAY,
  7 * DAY,
  14 * DAY,
];

/** The axis' range for data from `min` to `max`: the data's own span, padded a little on each side. */
export function timeRange(min: number, max: number): [number, number] {
  const pad = Math.max(30, (max - min) * 0.05);
  return [min - pad, max + pad];
}

/** Seconds the browser's zone is ahead of UTC at a time. */
const zoneOffset = (seconds: number) => -new Date(seconds * 1000).getTimezoneOffset() * MINUTE;

/** The step between ticks for a range, so that at most `most` ticks fit. */
export function tickStep(from: number, to: number, most: number): number {
  const span = Math.max(1, to - from);
  return STEPS.find((step) => span / step <= most) ?? Math.ceil(span / most / DAY) * DAY;
}

/** Ticks at round times of the browser's zone (whole minutes, hours, local midnights) within the range. */
export function timeTicks(from: number, to: number, most: number): number[] {
  const step = tickStep(from, to, most);
  const offset = zoneOffset(from);
  const ticks: number[] = [];
  for (let tick = Math.ceil((from + offset) / step) * step - offset; tick <= to; tick += step) ticks.push(tick);
  return ticks;
}

const clock = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const clockWithSeconds = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
const day = new Intl.DateTimeFormat(undefined, { month: "short", day: "numeric" });
const dayAndClock = new Intl.DateTimeFormat(undefined, {
  month: "short",
  day: "numeric",
  hour: "2-digit",
  minute: "2-digit",
});

/** The labels of ticks `step` seconds apart over a range `span` seconds long: as precise as the step, no more. */
export function tickLabels(ticks: number[], step: number, span: number): string[] {
  const format = step < MINUTE ? clockWithSeconds : step >= DAY ? day : span <= DAY ? clock : dayAndClock;
  return ticks.map((tick) => format.format(new Date(tick * 1000)));
}
