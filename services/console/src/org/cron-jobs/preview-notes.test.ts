import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import type { PreviewFiring } from "../../api/types.ts";
import { formatTimeIn } from "../../format.ts";
import { PreviewView } from "./cron-preview.tsx";
import { jitterNote, maxRunsNote, readPreview } from "./preview-notes.ts";

const ZONE = "Europe/Paris";
const START = "2027-03-01T09:00:00.000Z";
const END = "2027-03-01T10:00:00.000Z";
const at = (iso: string) => formatTimeIn(iso, ZONE);

/** Firings a minute apart from START; those past `maxRuns` make no run. */
function firings(count: number, maxRuns?: number, jitterMs = 0): PreviewFiring[] {
  return Array.from({ length: count }, (_, index) => {
    const time = new Date(Date.parse(START) + index * 60_000).toISOString();
    const run = maxRuns === undefined || index < maxRuns ? index + 1 : null;
    const until = new Date(Date.parse(time) + jitterMs).toISOString();
    return { at: time, run, sendFrom: run === null ? null : time, sendUntil: run === null ? null : until };
  });
}

const answer = (list: PreviewFiring[], neverFires = list.length === 0) => ({
  firings: list,
  neverFires,
  timezone: ZONE,
});

describe("the preview's notes", () => {
  it("say what the run limit cuts off and that the job then is Completed", () => {
    expect(maxRunsNote(3)).toBe("runs 4 and later do not happen (maxRuns 3)");
    const reading = readPreview(answer(firings(5, 3)), { expression: "* * * * *", maxRuns: 3 });
    expect(reading.notes).toEqual([
      "runs 4 and later do not happen (maxRuns 3)",
      "after its last run the job is Completed",
    ]);
    expect(reading.firings.map((firing) => firing.run)).toEqual([1, 2, 3, null, null]);
    const editing = readPreview(answer(firings(5, 3)), { expression: "* * * * *", maxRuns: 3 }, { editing: true });
    expect(editing.notes[0]).toBe("runs 4 and later do not happen (maxRuns 3), the runs it made already included");
  });

  it("say the window's start and end, in the job's zone", () => {
    const reading = readPreview(answer(firings(3)), { expression: "* * * * *", startAt: START, endAt: END });
    expect(reading.notes).toEqual([
      `no run before ${at(START)} (startAt)`,
      `no run after ${at(END)} (endAt)`,
      "after its last run the job is Completed",
    ]);
  });

  it("say when an interval first runs", () => {
    expect(readPreview(answer(firings(2)), { every: "PT30S", startAt: START }).notes).toEqual([
      `the first run is at ${at(START)}, then every 30 s`,
    ]);
    expect(readPreview(answer(firings(2)), { every: "PT5M" }).notes).toEqual([
      "the first run is one interval after the job is created, then every 5 min",
    ]);
    expect(readPreview(answer(firings(2)), { every: "P1D" }, { editing: true }).notes).toEqual([
      "the first run is one interval after the save, then every day",
    ]);
    // Saved without a change of its firing times, an interval keeps its phase.
    expect(readPreview(answer(firings(2)), { every: "P1D" }, { editing: true, firingTimesKept: true }).notes).toEqual(
      [],
    );
  });

  it("say how far the jitter spreads each run", () => {
    expect(jitterNote(30_000)).toBe("each sent within 0–30 s after its time");
    expect(
      readPreview(answer(firings(2, undefined, 30_000)), { expression: "* * * * *", jitterMs: 30_000 }).notes,
    ).toEqual(["each sent within 0–30 s after its time"]);
    expect(readPreview(answer(firings(2)), { expression: "* * * * *", jitterMs: 0 }).notes).toEqual([]);
  });

  it("say when nothing fires: an expression no date matches, or a window without a firing", () => {
    expect(readPreview(answer([]), { expression: "0 0 30 2 *" }).nothingFires).toBe(
      "This expression never fires: no date matches it.",
    );
    expect(readPreview(answer([]), { every: "P1D", endAt: END }).nothingFires).toBe(
      "No firing falls inside the window: the job would never run.",
    );
    expect(readPreview(answer(firings(1)), { expression: "* * * * *" }).nothingFires).toBeUndefined();
  });
});

describe("the preview", () => {
  it("lists the firings, strikes those past the run limit, and says the notes under them", () => {
    const reading = readPreview(answer(firings(5, 3, 30_000)), {
      expression: "* * * * *",
      maxRuns: 3,
      jitterMs: 30_000,
    });
    const html = renderToStaticMarkup(
      createElement(PreviewView, { state: { kind: "answer", reading, timezone: ZONE } }),
    );
    const items = [...html.matchAll(/<li( class="no-run")?>(.*?)<\/li>/g)].map(([, noRun, text = ""]) => [
      Boolean(noRun),
      text.replace(/<[^>]+>/g, ""),
    ]);
    const times = firings(5).map((firing) => at(firing.at));
    expect(items.slice(0, 5)).toEqual(
      times.map((time, index) => (index < 3 ? [false, time] : [true, `${time} no run: past the run limit`])),
    );
    expect(items.slice(5).map(([, text]) => text)).toEqual([
      "runs 4 and later do not happen (maxRuns 3)",
      "after its last run the job is Completed",
      "each sent within 0–30 s after its time",
    ]);
    expect(html).toContain(`dateTime="${START}"`);
  });

  it("tells firings less than a minute apart by their seconds", () => {
    const apart = (seconds: number) =>
      [0, 1].map((index) => {
        const time = new Date(Date.parse(START) + index * seconds * 1_000).toISOString();
        return { at: time, run: index + 1, sendFrom: time, sendUntil: time };
      });
    const render = (list: PreviewFiring[]) =>
      renderToStaticMarkup(
        createElement(PreviewView, {
          state: { kind: "answer", reading: readPreview(answer(list), { every: "PT30S" }), timezone: ZONE },
        }),
      );
    const second = new Date(Date.parse(START) + 30_000).toISOString();
    expect(render(apart(30))).toContain(`>${formatTimeIn(second, ZONE, { seconds: true })}</time>`);
    expect(render(apart(60))).toContain(`>${at(START)}</time>`);
  });

  it("shows the API's sentence, a hint while the form lacks a timing, and a warning when nothing fires", () => {
    const render = (state: Parameters<typeof PreviewView>[0]["state"]) =>
      renderToStaticMarkup(createElement(PreviewView, { state }));
    expect(render({ kind: "error", error: "Give either 'expression' or 'every'" })).toContain(
      "Give either &#x27;expression&#x27; or &#x27;every&#x27;",
    );
    expect(render({ kind: "idle", hint: "Type a cron expression to see when it fires." })).toContain(
      '<p class="hint">Type a cron expression to see when it fires.</p>',
    );
    const never = readPreview(answer([]), { every: "P1D", endAt: END });
    expect(render({ kind: "answer", reading: never, timezone: ZONE })).toContain(
      "No firing falls inside the window: the job would never run.",
    );
  });
});
