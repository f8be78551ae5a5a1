import { describe, expect, it } from "vitest";
import { formatTime } from "../../format.ts";
import { cronJobRecord } from "../record-fixtures.ts";
import {
  describeCatchUp,
  describeEvery,
  describeJitter,
  describeMaxRuns,
  describeOverlap,
  describeTiming,
  describeWindow,
  durationMs,
  spanWords,
  timingExtras,
} from "./describe-schedule.ts";

const START = "2027-03-01T09:00:00.000Z";
const END = "2027-03-31T18:00:00.000Z";

/** A job's timing: every five minutes with the defaults, changed by `change`. */
const timing = cronJobRecord;

describe("a cron job's interval in words", () => {
  it("reads ISO 8601 durations of weeks, days, hours, minutes and seconds", () => {
    expect(durationMs("PT30S")).toBe(30_000);
    expect(durationMs("PT5M")).toBe(300_000);
    expect(durationMs("P1D")).toBe(86_400_000);
    expect(durationMs("P1W")).toBe(604_800_000);
    expect(durationMs("PT1H30M")).toBe(5_400_000);
    expect(durationMs("PT1.5S")).toBe(1_500);
    expect(durationMs("pt10s")).toBe(10_000);
    expect(durationMs("P1M")).toBeUndefined();
    expect(durationMs("P")).toBeUndefined();
    expect(durationMs("30s")).toBeUndefined();
  });

  it("says one of a unit by its name and other spans exactly", () => {
    expect(describeEvery("PT30S")).toBe("every 30 s");
    expect(describeEvery("PT5M")).toBe("every 5 min");
    expect(describeEvery("P1D")).toBe("every day");
    expect(describeEvery("PT1H")).toBe("every hour");
    expect(describeEvery("PT1M")).toBe("every minute");
    expect(describeEvery("PT1S")).toBe("every second");
    expect(describeEvery("P1W")).toBe("every week");
    expect(describeEvery("PT1H30M")).toBe("every 1 h 30 min");
    expect(describeEvery("P2D")).toBe("every 2 d");
    expect(describeEvery("P1Y")).toBe("every P1Y");
  });

  it("writes spans in their units from days down", () => {
    expect(spanWords(30_000)).toBe("30 s");
    expect(spanWords(1_500)).toBe("1 s 500 ms");
    expect(spanWords(90_061_000)).toBe("1 d 1 h 1 min 1 s");
    expect(spanWords(0)).toBe("0 s");
  });
});

describe("a cron job's window, run limit, catch-up, overlap and jitter in words", () => {
  it("say the window from its start until its end, either alone, or nothing", () => {
    expect(describeWindow(START, END)).toBe(`from ${formatTime(START)} until ${formatTime(END)}`);
    expect(describeWindow(START, null)).toBe(`from ${formatTime(START)}`);
    expect(describeWindow(null, END)).toBe(`until ${formatTime(END)}`);
    expect(describeWindow(null, null)).toBeUndefined();
  });

  it("say the run limit", () => {
    expect(describeMaxRuns(3)).toBe("at most 3 runs");
    expect(describeMaxRuns(1)).toBe("at most 1 run");
    expect(describeMaxRuns(null)).toBeUndefined();
  });

  it("say the catch-up, with its window for all", () => {
    expect(describeCatchUp("skip")).toBe("catch-up: skip");
    expect(describeCatchUp("latest")).toBe("catch-up: latest");
    expect(describeCatchUp("all", 3_600_000)).toBe("catch-up: all within 1 h");
    expect(describeCatchUp("all", 5_400_000)).toBe("catch-up: all within 1 h 30 min");
  });

  it("say the overlap and the jitter", () => {
    expect(describeOverlap("skip")).toBe("overlap: skip");
    expect(describeOverlap("buffer")).toBe("overlap: buffer");
    expect(describeJitter(30_000)).toBe("jitter up to 30 s");
    expect(describeJitter(0)).toBe("no jitter");
  });

  it("say a whole timing in one line, defaults left unsaid", () => {
    expect(describeTiming(timing({}))).toBe("*/5 * * * *");
    expect(
      describeTiming(
        timing({
          expression: null,
          every: "PT30S",
          startAt: START,
          endAt: END,
          maxRuns: 3,
          catchUp: "latest",
          overlap: "skip",
          jitterMs: 30_000,
        }),
        (iso) => iso.slice(0, 10),
      ),
    ).toBe(
      "every 30 s, from 2027-03-01 until 2027-03-31, at most 3 runs, catch-up: latest, overlap: skip, jitter up to 30 s",
    );
    expect(timingExtras(timing({ catchUp: "all", catchUpWindowMs: 600_000 }))).toEqual(["catch-up: all within 10 min"]);
  });
});
