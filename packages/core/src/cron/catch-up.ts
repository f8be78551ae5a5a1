import type { CatchUpPolicy, OverlapPolicy } from "../statuses.ts";
import { firingsBetween, nextFiring, type Schedule } from "./schedule.ts";

// What a cron job's firing makes (contract §10.4), decided in one place for the worker that
// processes a firing (startCronRun) and for the reconciler (settleCronJobs), both under the job's
// row lock, from Postgres alone: the job's newest run and `schedule_since` say where its firings
// were last handled; Redis (what BullMQ's scheduler remembers) is never asked.
//
//   - catchUp `skip`: the firing is run when its job starts within CRON_MISSED_AFTER_MS of its time,
//     else it is missed (not delivered, not recorded); firings the scheduler never brought (it
//     computes its next firing from when a late job was taken) are not delivered either.
//   - `latest`: of the firings not handled yet up to now (the firing itself among them), the most
//     recent one is run, once; the older ones are superseded.
//   - `all`: every firing not handled yet within `catchUpWindowMs` before now, the most recent
//     CATCH_UP_MAX_RUNS of them, each a run of its own.
//   - `overlap` then decides each run in time order, counting the job's undecided (Queued) runs:
//     `allow` sends, `skip` records a Skipped run while one is undecided, `buffer` lets one wait
//     (sent when the earlier runs end) and records further ones Skipped.
//   - `maxRuns`: the runs the job made so far (Skipped ones aside) plus these; the run that reaches
//     it is the last, and the job is Completed. A job whose schedule has no firing left after what
//     was handled (its endAt passed) is Completed too.

/** The most runs one catch-up makes (contract §10.4: `catchUp: all`, at most 100). */
export const CATCH_UP_MAX_RUNS = 100;

/** The deployment's rules of firings (config). */
export interface FiringRules {
  /** CRON_MISSED_AFTER_MS: a firing whose job starts later than this after its time is missed. */
  missedAfterMs: number;
}

/** What the decision reads of a cron job, under its row lock. */
export interface CronJobFiringState {
  schedule: Schedule;
  catchUp: CatchUpPolicy;
  catchUpWindowMs: number;
  overlap: OverlapPolicy;
  maxRuns: number | null;
  /** Runs the job has made, Skipped ones aside (its run count). */
  runCount: number;
  /** When its schedule was last set (ms): no firing before it is ever caught up. */
  since: number;
  /** The newest run's scheduledFor (ms), whatever its status; null when it has none. */
  lastRunAt: number | null;
  /** Its runs that are undecided now (Queued: waiting, being sent or retried). */
  queued: number;
}

/** `send`: sent now (or at its jittered time); `buffered`: waits for the earlier runs to end; `skipped`: recorded, never sent. */
export type PlannedStatus = "send" | "buffered" | "skipped";

export interface PlannedRun {
  scheduledFor: number;
  status: PlannedStatus;
}

/** Why a firing made no run. */
export type DroppedReason =
  | "missed: its job started after CRON_MISSED_AFTER_MS (catchUp skip)"
  | "superseded by a later firing (catchUp latest)"
  | "outside the catch-up window (catchUp all)"
  | "the job made its maxRuns runs";

export interface FiringPlan {
  /** The runs to make, oldest first (the firing's own among them when it is run). */
  runs: PlannedRun[];
  /** Why the firing itself makes no run (only for a firing, when it is not among `runs`). */
  dropped?: DroppedReason;
  /** The job is Completed by this decision: its maxRuns reached, or no firing left. */
  completes: boolean;
}

/**
 * The most recent firing strictly after `after` and at most `until`, or undefined: `nextFiring`
 * twice when there is one firing in the range (the usual case), else a binary search over the range
 * (about 40 calls for a range of years), `nextFiring` being non-decreasing in its argument.
 */
export function latestFiring(schedule: Schedule, after: number, until: number): number | undefined {
  const first = nextFiring(schedule, after);
  if (first === undefined || first > until) return undefined;
  const second = nextFiring(schedule, first);
  if (second === undefined || second > until) return first;
  // next(lo) <= until < next(hi): at the end hi = lo + 1 and next(lo) = hi is the latest firing.
  let lo = first;
  let hi = until;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const next = nextFiring(schedule, mid);
    if (next !== undefined && next <= until) lo = mid;
    else hi = mid;
  }
  return nextFiring(schedule, lo);
}

/** How many firings one forward walk covers at most (an expression's `nextFiring` costs ~0.1–0.3 ms). */
const MAX_FIRINGS_WALKED = 1_000;

/**
 * The `limit` most recent firings strictly after `after` and at most `until`, oldest first. Walks
 * forward from a start guessed from the spacing of the two latest firings (about `2 × limit`
 * firings for a regular schedule), from further back while that held too few; when the walk would
 * be too long (an irregular schedule), steps back one firing at a time instead (`latestFiring`).
 */
export function recentFirings(schedule: Schedule, after: number, until: number, limit: number): number[] {
  const latest = latestFiring(schedule, after, until);
  if (latest === undefined) return [];
  const previous = limit > 1 ? latestFiring(schedule, after, latest - 1) : undefined;
  if (previous === undefined) return [latest];
  let span = (latest - previous) * (limit + 1) * 2;
  for (let walked = 0; walked < MAX_FIRINGS_WALKED; span *= 4) {
    const from = Math.max(after, latest - span);
    const times = firingsBetween(schedule, from, latest, MAX_FIRINGS_WALKED - walked);
    walked += times.length;
    if (times.at(-1) !== latest) break;
    if (times.length >= limit || from === after) return times.slice(-limit);
  }
  const times = [latest];
  for (let before: number | undefined = previous; before !== undefined && times.length < limit; ) {
    times.unshift(before);
    before = latestFiring(schedule, after, before - 1);
  }
  return times;
}

/** The status of each run in time order, by the overlap policy and the job's undecided runs. */
function overlapStatus(overlap: OverlapPolicy, queued: number): PlannedStatus {
  if (overlap === "allow") return "send";
  if (overlap === "skip") return queued === 0 ? "send" : "skipped";
  return queued === 0 ? "send" : queued === 1 ? "buffered" : "skipped";
}

/**
 * The firings to run now: for a firing being processed (`firing`, which has no run yet), or, for
 * the reconciler (`firing` undefined), the firings not handled that are overdue.
 */
function firingsToRun(
  state: CronJobFiringState,
  firing: number | undefined,
  now: number,
  rules: FiringRules,
  reconcile: { lost: boolean } | undefined,
): { times: number[]; dropped?: DroppedReason } {
  const { schedule } = state;
  // Firings up to `handled` were run (or decided) already, or belong to an earlier schedule.
  const handled = Math.max(state.lastRunAt ?? Number.NEGATIVE_INFINITY, state.since);
  if (reconcile) {
    // Nothing for the reconciler to do while the next firing after the newest run may still be
    // brought by the scheduler (within the grace), unless the scheduler was lost.
    const next = nextFiring(schedule, handled);
    const overdueBefore = reconcile.lost ? now : now - rules.missedAfterMs;
    if (state.catchUp === "skip" || next === undefined || next > overdueBefore) return { times: [] };
  }
  if (state.catchUp === "skip") {
    if (firing === undefined) return { times: [] };
    if (now - firing > rules.missedAfterMs) {
      return { times: [], dropped: "missed: its job started after CRON_MISSED_AFTER_MS (catchUp skip)" };
    }
    return { times: [firing] };
  }
  // A firing of an earlier schedule, or one older than the newest run, is not caught up.
  const own = firing !== undefined && firing > handled ? firing : undefined;
  if (state.catchUp === "latest") {
    const latest = latestFiring(schedule, handled, now);
    const chosen = own !== undefined && (latest === undefined || own > latest) ? own : latest;
    if (chosen === undefined) return { times: [], dropped: "superseded by a later firing (catchUp latest)" };
    return chosen === firing
      ? { times: [chosen] }
      : { times: [chosen], dropped: "superseded by a later firing (catchUp latest)" };
  }
  const windowStart = now - state.catchUpWindowMs;
  const times = recentFirings(schedule, Math.max(handled, windowStart - 1), now, CATCH_UP_MAX_RUNS);
  if (firing !== undefined && !times.includes(firing)) {
    // The firing itself, even older than the newest run, while it is within the window.
    if (firing >= windowStart && firing > state.since) {
      times.push(firing);
      times.sort((a, b) => a - b);
      if (times.length > CATCH_UP_MAX_RUNS) times.shift();
    }
    if (!times.includes(firing)) return { times, dropped: "outside the catch-up window (catchUp all)" };
  }
  return { times };
}

/**
 * Decides what a firing makes (see the top of this file). `firing`: the time of the firing being
 * processed, which has no run yet; undefined for the reconciler's look at a job (`reconcile.lost`:
 * its scheduler was missing from Redis, so nothing else brings its firings up to now).
 */
export function planFirings(
  state: CronJobFiringState,
  firing: number | undefined,
  now: number,
  rules: FiringRules,
  reconcile?: { lost: boolean },
): FiringPlan {
  const { times, dropped } = firingsToRun(state, firing, now, rules, reconcile);
  const runs: PlannedRun[] = [];
  let queued = state.queued;
  let runCount = state.runCount;
  let limitReached = false;
  for (const scheduledFor of times) {
    if (state.maxRuns !== null && runCount >= state.maxRuns) {
      limitReached = true;
      break;
    }
    const status = overlapStatus(state.overlap, queued);
    if (status !== "skipped") {
      queued++;
      runCount++;
    }
    runs.push({ scheduledFor, status });
  }
  limitReached ||= state.maxRuns !== null && runCount >= state.maxRuns;
  const plan: FiringPlan = {
    runs,
    completes: limitReached || noFiringLeft(state, firing, runs, now, rules, reconcile),
  };
  const ownRun = firing !== undefined && runs.some((run) => run.scheduledFor === firing);
  if (firing !== undefined && !ownRun) plan.dropped = dropped ?? "the job made its maxRuns runs";
  return plan;
}

/**
 * Whether the job's schedule has no firing left once this decision is made: none after the newest
 * firing handled (for the reconciler, none after the grace either: a firing within it may still come).
 * Only a schedule with an end can run out.
 */
function noFiringLeft(
  state: CronJobFiringState,
  firing: number | undefined,
  runs: PlannedRun[],
  now: number,
  rules: FiringRules,
  reconcile: { lost: boolean } | undefined,
): boolean {
  if (state.schedule.endAt === null) return false;
  let after = Math.max(state.lastRunAt ?? Number.NEGATIVE_INFINITY, state.since, firing ?? Number.NEGATIVE_INFINITY);
  for (const run of runs) after = Math.max(after, run.scheduledFor);
  if (reconcile) after = Math.max(after, reconcile.lost ? now : now - rules.missedAfterMs);
  return nextFiring(state.schedule, after) === undefined;
}

/**
 * Whether the reconciler has something to decide about a job (a cheap look, without its lock): a
 * firing overdue with no run (catch-up), no firing left (Completed) or its run count at maxRuns.
 */
export function needsSettling(state: CronJobFiringState, now: number, rules: FiringRules, lost: boolean): boolean {
  if (state.maxRuns !== null && state.runCount >= state.maxRuns) return true;
  const plan = planFirings(state, undefined, now, rules, { lost });
  return plan.runs.length > 0 || plan.completes;
}
