import { describe, expect, it } from "vitest";
import { CATCH_UP_MAX_RUNS, type CronJobFiringState, latestFiring, planFirings, recentFirings } from "./catch-up.ts";
import { firingsBetween, type Schedule } from "./schedule.ts";

const T0 = Date.UTC(2031, 5, 2, 12, 0, 0);
const SECOND = 1_000;
const rules = { missedAfterMs: 60_000 };

const every = (ms: number, window: { startAt?: number; endAt?: number } = {}): Schedule => ({
  expression: null,
  timezone: "UTC",
  everyMs: ms,
  firstAt: window.startAt ?? T0,
  startAt: window.startAt ?? null,
  endAt: window.endAt ?? null,
});
const cron = (expression: string, endAt: number | null = null): Schedule => ({
  expression,
  timezone: "UTC",
  everyMs: null,
  firstAt: null,
  startAt: null,
  endAt,
});

/** A job firing every 10 s from T0, its last run at `lastRunAt`, with the default policies. */
function job(state: Partial<CronJobFiringState> = {}): CronJobFiringState {
  return {
    schedule: every(10 * SECOND),
    catchUp: "skip",
    catchUpWindowMs: 3_600_000,
    overlap: "allow",
    maxRuns: null,
    runCount: 0,
    since: T0 - 10 * SECOND,
    lastRunAt: null,
    queued: 0,
    ...state,
  };
}
const at = (seconds: number) => T0 + seconds * SECOND;

describe("latestFiring", () => {
  it("finds the most recent firing in a range, for intervals and expressions, in few steps", () => {
    expect(latestFiring(every(10 * SECOND), at(-1), at(35))).toBe(at(30));
    expect(latestFiring(every(10 * SECOND), at(30), at(35))).toBeUndefined();
    expect(latestFiring(every(10 * SECOND), at(29), at(30))).toBe(at(30));
    // Weekdays at 09:00 only: the Friday's firing, seen from the Sunday after.
    const weekdays = cron("0 9 * * 1-5");
    expect(new Date(latestFiring(weekdays, Date.UTC(2031, 5, 1), Date.UTC(2031, 5, 8, 12)) ?? 0).toISOString()).toBe(
      "2031-06-06T09:00:00.000Z",
    );
    expect(latestFiring(cron("*/5 * * * * *"), at(0), at(2 * 3600 + 3))).toBe(at(2 * 3600));
  });
});

describe("recentFirings", () => {
  it("gives the most recent ones, oldest first, however many the range holds", () => {
    expect(recentFirings(every(10 * SECOND), at(-1), at(3_600), 100)).toEqual(
      Array.from({ length: 100 }, (_, n) => at(3_600 - (99 - n) * 10)),
    );
    expect(recentFirings(every(10 * SECOND), at(-1), at(25), 100)).toEqual([at(0), at(10), at(20)]);
    const perSecond = cron("* * * * * *");
    expect(recentFirings(perSecond, at(0), at(600), 5)).toEqual([at(596), at(597), at(598), at(599), at(600)]);
  });

  it("finds them for an irregular schedule too (business hours, per second)", () => {
    const hours = cron("* * 9-10 * * *");
    const until = Date.UTC(2031, 5, 3, 9, 0, 1);
    const found = recentFirings(hours, until - 2 * 86_400_000, until, 5);
    expect(found.map((time) => new Date(time).toISOString())).toEqual([
      "2031-06-02T10:59:57.000Z",
      "2031-06-02T10:59:58.000Z",
      "2031-06-02T10:59:59.000Z",
      "2031-06-03T09:00:00.000Z",
      "2031-06-03T09:00:01.000Z",
    ]);
    expect(firingsBetween(hours, (found[0] as number) - 1, until, 10)).toEqual(found);
  });
});

describe("planFirings", () => {
  it("skip: runs a firing started within the grace, and misses a later one", () => {
    expect(planFirings(job(), at(0), at(0) + 20, rules)).toEqual({
      runs: [{ scheduledFor: at(0), status: "send" }],
      completes: false,
    });
    expect(planFirings(job(), at(0), at(61), rules)).toEqual({
      runs: [],
      dropped: "missed: its job started after CRON_MISSED_AFTER_MS (catchUp skip)",
      completes: false,
    });
  });

  it("latest: after an outage, one run: the most recent firing up to now", () => {
    // Workers down from 0 s: the scheduler's late job of 10 s is taken at 35 s.
    const down = job({ catchUp: "latest", lastRunAt: at(0) });
    expect(planFirings(down, at(10), at(35), rules)).toEqual({
      runs: [{ scheduledFor: at(30), status: "send" }],
      dropped: "superseded by a later firing (catchUp latest)",
      completes: false,
    });
    // The run of 30 s made, the firing of 30 s itself (a copy) finds nothing left to catch up.
    expect(planFirings({ ...down, lastRunAt: at(30) }, at(20), at(36), rules).runs).toEqual([]);
    // On time: the firing itself.
    expect(planFirings(down, at(10), at(10) + 5, rules).runs).toEqual([{ scheduledFor: at(10), status: "send" }]);
  });

  it("all: each firing not handled within the window, at most 100, each its own run", () => {
    const down = job({ catchUp: "all", lastRunAt: at(0), catchUpWindowMs: 25 * SECOND });
    expect(planFirings(down, at(10), at(35), rules).runs.map((run) => run.scheduledFor)).toEqual([
      at(10),
      at(20),
      at(30),
    ]);
    // The window: firings older than 25 s before now are not caught up (the firing itself neither).
    expect(planFirings(down, at(10), at(45), rules)).toMatchObject({
      runs: [{ scheduledFor: at(20) }, { scheduledFor: at(30) }, { scheduledFor: at(40) }],
      dropped: "outside the catch-up window (catchUp all)",
    });
    const long = job({ catchUp: "all", lastRunAt: at(0), catchUpWindowMs: 86_400_000 });
    const runs = planFirings(long, at(10), at(3_600), rules).runs;
    expect(runs).toHaveLength(CATCH_UP_MAX_RUNS);
    expect(runs.at(-1)?.scheduledFor).toBe(at(3_600));
    // Nothing before the schedule was set.
    expect(planFirings(job({ catchUp: "all", since: at(25) }), at(30), at(45), rules).runs).toEqual([
      { scheduledFor: at(30), status: "send" },
      { scheduledFor: at(40), status: "send" },
    ]);
  });

  it("overlap: skip records a Skipped run while one is undecided; buffer lets one wait", () => {
    expect(planFirings(job({ overlap: "skip", queued: 1 }), at(0), at(0), rules).runs).toEqual([
      { scheduledFor: at(0), status: "skipped" },
    ]);
    expect(planFirings(job({ overlap: "skip" }), at(0), at(0), rules).runs[0]?.status).toBe("send");
    expect(planFirings(job({ overlap: "buffer", queued: 1 }), at(0), at(0), rules).runs[0]?.status).toBe("buffered");
    expect(planFirings(job({ overlap: "buffer", queued: 2 }), at(0), at(0), rules).runs[0]?.status).toBe("skipped");
    // Caught-up runs are decided in time order, as firings would have been.
    const caughtUp = planFirings(job({ catchUp: "all", overlap: "buffer", lastRunAt: at(0) }), at(10), at(45), rules);
    expect(caughtUp.runs.map((run) => run.status)).toEqual(["send", "buffered", "skipped", "skipped"]);
  });

  it("maxRuns: the run that reaches it completes the job; Skipped runs do not count", () => {
    expect(planFirings(job({ maxRuns: 3, runCount: 2 }), at(0), at(0), rules)).toEqual({
      runs: [{ scheduledFor: at(0), status: "send" }],
      completes: true,
    });
    expect(planFirings(job({ maxRuns: 3, runCount: 3 }), at(0), at(0), rules)).toEqual({
      runs: [],
      dropped: "the job made its maxRuns runs",
      completes: true,
    });
    expect(planFirings(job({ maxRuns: 3, runCount: 2, overlap: "skip", queued: 1 }), at(0), at(0), rules)).toEqual({
      runs: [{ scheduledFor: at(0), status: "skipped" }],
      completes: false,
    });
    // A catch-up stops at the limit.
    const all = job({ catchUp: "all", lastRunAt: at(0), maxRuns: 3, runCount: 1 });
    expect(planFirings(all, at(10), at(45), rules)).toMatchObject({
      runs: [{ scheduledFor: at(10) }, { scheduledFor: at(20) }],
      completes: true,
    });
  });

  it("endAt: the last firing completes the job; the reconciler completes one whose window passed", () => {
    const ending = job({ schedule: every(10 * SECOND, { endAt: at(25) }) });
    expect(planFirings(ending, at(10), at(10), rules).completes).toBe(false);
    expect(planFirings(ending, at(20), at(20), rules).completes).toBe(true);
    // Nothing fired at 20 s: while the firing may still come (within the grace), the job stays Active.
    const stalled = { ...ending, lastRunAt: at(10) };
    expect(planFirings(stalled, undefined, at(30), rules, { lost: false }).completes).toBe(false);
    expect(planFirings(stalled, undefined, at(81), rules, { lost: false }).completes).toBe(true);
    // Its scheduler lost, nothing will bring it.
    expect(planFirings(stalled, undefined, at(30), rules, { lost: true }).completes).toBe(true);
    expect(planFirings(job({ schedule: cron("* * * * *") }), at(0), at(0), rules).completes).toBe(false);
  });

  it("reconciler: catches up only firings overdue by the grace, or any when the scheduler was lost", () => {
    const latest = job({ catchUp: "latest", lastRunAt: at(0) });
    expect(planFirings(latest, undefined, at(30), rules, { lost: false }).runs).toEqual([]);
    expect(planFirings(latest, undefined, at(75), rules, { lost: false }).runs).toEqual([
      { scheduledFor: at(70), status: "send" },
    ]);
    expect(planFirings(latest, undefined, at(35), rules, { lost: true }).runs).toEqual([
      { scheduledFor: at(30), status: "send" },
    ]);
    expect(planFirings(job({ lastRunAt: at(0) }), undefined, at(300), rules, { lost: true }).runs).toEqual([]);
  });
});
