import type { CronPreview, CronPreviewQuery, PreviewFiring } from "../../api/types.ts";
import { formatCount, formatTimeIn } from "../../format.ts";
import { describeEvery, spanWords } from "./describe-schedule.ts";

// What the preview says besides the times: how the window, the run limit and the jitter shape them
// (contract §10.4), in the job's zone as the times are.

export interface PreviewReading {
  /** The next firings, oldest first; one past `maxRuns` has `run: null` (it makes no run). */
  firings: PreviewFiring[];
  /** One sentence each: the first run of an interval, the window, the run limit, the jitter. */
  notes: string[];
  /** Set when nothing will fire: no date matches the expression, or none inside the window. */
  nothingFires?: string;
}

/** `runs 4 and later do not happen (maxRuns 3)`. */
export const maxRunsNote = (maxRuns: number) =>
  `runs ${formatCount(maxRuns + 1)} and later do not happen (maxRuns ${formatCount(maxRuns)})`;

/** `each sent within 0–30 s after its time`. */
export const jitterNote = (jitterMs: number) => `each sent within 0–${spanWords(jitterMs)} after its time`;

/**
 * The preview's answer read with the query that asked for it. `editing`: the form edits an existing
 * job (the preview counts runs as for a job created now; the runs the job made count too).
 * `firingTimesKept`: a save would leave its firing times as they are (an interval keeps its phase,
 * so its first run is not one interval after the save).
 */
export function readPreview(
  preview: Pick<CronPreview, "firings" | "neverFires" | "timezone">,
  query: CronPreviewQuery,
  { editing = false, firingTimesKept = false }: { editing?: boolean; firingTimesKept?: boolean } = {},
): PreviewReading {
  const at = (iso: string) => formatTimeIn(iso, preview.timezone);
  const { startAt, endAt, maxRuns, jitterMs, every } = query;
  const notes: string[] = [];
  if (every) {
    const then = `then ${describeEvery(every)}`;
    if (startAt) notes.push(`the first run is at ${at(startAt)}, ${then}`);
    else if (!editing) notes.push(`the first run is one interval after the job is created, ${then}`);
    else if (!firingTimesKept) notes.push(`the first run is one interval after the save, ${then}`);
  } else if (startAt) {
    notes.push(`no run before ${at(startAt)} (startAt)`);
  }
  if (endAt) notes.push(`no run after ${at(endAt)} (endAt)`);
  if (maxRuns !== undefined) {
    notes.push(editing ? `${maxRunsNote(maxRuns)}, the runs it made already included` : maxRunsNote(maxRuns));
  }
  const runs = preview.firings.filter((firing) => firing.run !== null);
  if ((endAt || maxRuns !== undefined) && runs.length > 0) notes.push("after its last run the job is Completed");
  if (jitterMs !== undefined && jitterMs > 0) notes.push(jitterNote(jitterMs));
  const reading: PreviewReading = { firings: preview.firings, notes };
  if (preview.neverFires || preview.firings.length === 0) {
    reading.nothingFires =
      startAt || endAt
        ? "No firing falls inside the window: the job would never run."
        : "This expression never fires: no date matches it.";
  }
  return reading;
}
