import { describe, expect, it } from "vitest";
import type { CronJob } from "../../api/types.ts";
import { isoToLocalInput } from "../../format.ts";
import { cronJobRecord } from "../record-fixtures.ts";
import {
  type CronForm,
  createRequestOfForm,
  cronFormOf,
  editRequestOfForm,
  firingTimesKept,
  NEW_CRON_FORM,
  NOTHING_CHANGED,
  PREVIEW_COUNT,
  previewQueryOfForm,
  spanFieldOf,
} from "./cron-form.ts";

// Whole minutes: a datetime-local input shows minutes, so these go there and back unchanged.
const START = "2027-03-01T09:00:00.000Z";
const END = "2027-03-31T18:30:00.000Z";

const JOB: CronJob = cronJobRecord({ payload: '{"a":1}', timezone: "Europe/Paris" });

const form = (change: Partial<CronForm>): CronForm => ({
  ...NEW_CRON_FORM,
  destination: "https://example.com/hook",
  payload: '{"a":1}',
  ...change,
});

describe("a new cron job's form", () => {
  it("sends an expression, or an interval, and leaves every empty field and default policy out", () => {
    expect(createRequestOfForm(form({ expression: " 0 9 * * 1-5 " }))).toEqual({
      body: { destination: "https://example.com/hook", payload: '{"a":1}', expression: "0 9 * * 1-5" },
    });
    expect(createRequestOfForm(form({ mode: "every", expression: "0 9 * * *", every: "PT30S" }))).toEqual({
      body: { destination: "https://example.com/hook", payload: '{"a":1}', every: "PT30S" },
    });
  });

  it("sends the window as ISO instants with a zone, the run limit, the policies and the spans in ms", () => {
    const outcome = createRequestOfForm(
      form({
        mode: "every",
        every: "PT5M",
        timezone: " Europe/Paris ",
        startAt: isoToLocalInput(START),
        endAt: isoToLocalInput(END),
        maxRuns: "3",
        catchUp: "all",
        catchUpWindow: { count: "30", unitMs: 60_000 },
        overlap: "skip",
        jitter: { count: "30", unitMs: 1_000 },
      }),
    );
    expect(outcome).toEqual({
      body: {
        destination: "https://example.com/hook",
        payload: '{"a":1}',
        timezone: "Europe/Paris",
        every: "PT5M",
        startAt: START,
        endAt: END,
        maxRuns: 3,
        catchUp: "all",
        catchUpWindowMs: 1_800_000,
        overlap: "skip",
        jitterMs: 30_000,
      },
    });
  });

  it("sends a catch-up window only with catch-up all", () => {
    const outcome = createRequestOfForm(
      form({ expression: "* * * * *", catchUp: "latest", catchUpWindow: { count: "30", unitMs: 60_000 } }),
    );
    expect(outcome).toEqual({ body: expect.objectContaining({ catchUp: "latest" }) });
    expect("body" in outcome && "catchUpWindowMs" in outcome.body).toBe(false);
  });

  it("sends labels and a callback URL only when given, and refuses labels it cannot read", () => {
    expect(
      createRequestOfForm(
        form({ expression: "* * * * *", labels: "team:ops\ntier:gold", callbackUrl: " https://x.test/cb " }),
      ),
    ).toEqual({
      body: {
        destination: "https://example.com/hook",
        payload: '{"a":1}',
        expression: "* * * * *",
        labels: { team: "ops", tier: "gold" },
        callbackUrl: "https://x.test/cb",
      },
    });
    expect(createRequestOfForm(form({ expression: "* * * * *", labels: "team" }))).toEqual({
      problem: "Write each label as key:value, one a line (not “team”)",
    });
  });

  it("leaves a missing expression to the API's own sentence", () => {
    expect(createRequestOfForm(form({ expression: "  " }))).toEqual({
      body: { destination: "https://example.com/hook", payload: '{"a":1}' },
    });
  });

  it("refuses what it cannot read as a number or a time", () => {
    expect(createRequestOfForm(form({ maxRuns: "2.5" }))).toEqual({ problem: "The run limit must be a whole number" });
    expect(createRequestOfForm(form({ jitter: { count: "-1", unitMs: 1_000 } }))).toEqual({
      problem: "The jitter must be a whole number",
    });
    expect(createRequestOfForm(form({ startAt: "not a time" }))).toEqual({
      problem: "The start is not a valid date and time",
    });
  });
});

describe("an existing cron job's form", () => {
  it("reads the job's timing into its fields, spans in the largest whole unit", () => {
    const job: CronJob = {
      ...JOB,
      expression: null,
      every: "PT30S",
      startAt: START,
      maxRuns: 3,
      catchUp: "all",
      catchUpWindowMs: 5_400_000,
      jitterMs: 1_500,
    };
    expect(cronFormOf(job)).toMatchObject({
      mode: "every",
      every: "PT30S",
      expression: "",
      startAt: isoToLocalInput(START),
      endAt: "",
      maxRuns: "3",
      catchUpWindow: { count: "90", unitMs: 60_000 },
      jitter: { count: "1500", unitMs: 1 },
    });
    expect(spanFieldOf(0)).toEqual({ count: "", unitMs: 1_000 });
    expect(spanFieldOf(7_200_000)).toEqual({ count: "2", unitMs: 3_600_000 });
  });

  it("sends only what changed, and nothing when nothing did", () => {
    const untouched = cronFormOf(JOB);
    expect(editRequestOfForm(untouched, JOB)).toEqual({ problem: NOTHING_CHANGED });
    expect(editRequestOfForm({ ...untouched, payload: "{}", maxRuns: "5" }, JOB)).toEqual({
      body: { payload: "{}", maxRuns: 5 },
    });
    expect(editRequestOfForm({ ...untouched, timezone: "" }, JOB)).toEqual({ body: { timezone: "UTC" } });
  });

  it("sends labels and a callback URL that changed, a cleared callback URL as null and cleared labels as {}", () => {
    const labelled = { ...JOB, labels: { team: "ops" }, callbackUrl: "https://x.test/cb" };
    expect(cronFormOf(labelled)).toMatchObject({ labels: "team:ops", callbackUrl: "https://x.test/cb" });
    expect(editRequestOfForm(cronFormOf(labelled), labelled)).toEqual({ problem: NOTHING_CHANGED });
    expect(editRequestOfForm({ ...cronFormOf(labelled), labels: "", callbackUrl: "" }, labelled)).toEqual({
      body: { labels: {}, callbackUrl: null },
    });
    expect(editRequestOfForm({ ...cronFormOf(JOB), labels: "tier:gold" }, JOB)).toEqual({
      body: { labels: { tier: "gold" } },
    });
  });

  it("clears a start, an end and a run limit with null, and empties a jitter to 0", () => {
    const job: CronJob = { ...JOB, startAt: START, endAt: END, maxRuns: 3, jitterMs: 30_000 };
    const cleared = { ...cronFormOf(job), startAt: "", endAt: "", maxRuns: "", jitter: { count: "", unitMs: 1_000 } };
    expect(editRequestOfForm(cleared, job)).toEqual({
      body: { startAt: null, endAt: null, maxRuns: null, jitterMs: 0 },
    });
  });

  it("keeps a start whose input is untouched, seconds and all", () => {
    const job: CronJob = { ...JOB, startAt: "2027-03-01T09:00:30.500Z" };
    expect(editRequestOfForm({ ...cronFormOf(job), payload: "{}" }, job)).toEqual({ body: { payload: "{}" } });
  });

  it("switches from an expression to an interval and back, clearing the other", () => {
    const toEvery = { ...cronFormOf(JOB), mode: "every" as const, every: "PT1M" };
    expect(editRequestOfForm(toEvery, JOB)).toEqual({ body: { every: "PT1M", expression: null } });
    const intervalJob: CronJob = { ...JOB, expression: null, every: "PT1M" };
    const toExpression = { ...cronFormOf(intervalJob), mode: "expression" as const, expression: "0 * * * *" };
    expect(editRequestOfForm(toExpression, intervalJob)).toEqual({ body: { expression: "0 * * * *", every: null } });
    expect(editRequestOfForm({ ...cronFormOf(intervalJob), every: "PT2M" }, intervalJob)).toEqual({
      body: { every: "PT2M" },
    });
  });

  it("sends the policies that changed, and a catch-up window only with catch-up all", () => {
    const changed = {
      ...cronFormOf(JOB),
      catchUp: "all" as const,
      catchUpWindow: { count: "", unitMs: 60_000 },
      overlap: "buffer" as const,
    };
    expect(editRequestOfForm(changed, JOB)).toEqual({ body: { catchUp: "all", overlap: "buffer" } });
    const widened = { ...changed, catchUpWindow: { count: "2", unitMs: 3_600_000 } };
    expect(editRequestOfForm(widened, JOB)).toEqual({
      body: { catchUp: "all", catchUpWindowMs: 7_200_000, overlap: "buffer" },
    });
  });

  it("says whether a save keeps the job's firing times", () => {
    expect(firingTimesKept(cronFormOf(JOB), JOB)).toBe(true);
    expect(firingTimesKept({ ...cronFormOf(JOB), payload: "{}", maxRuns: "3", overlap: "skip" }, JOB)).toBe(true);
    expect(firingTimesKept({ ...cronFormOf(JOB), jitter: { count: "5", unitMs: 1_000 } }, JOB)).toBe(true);
    expect(firingTimesKept({ ...cronFormOf(JOB), expression: "0 * * * *" }, JOB)).toBe(false);
    expect(firingTimesKept({ ...cronFormOf(JOB), timezone: "UTC" }, JOB)).toBe(false);
    expect(firingTimesKept({ ...cronFormOf(JOB), endAt: isoToLocalInput(END) }, JOB)).toBe(false);
    expect(firingTimesKept({ ...cronFormOf(JOB), maxRuns: "x" }, JOB)).toBe(false);
    // An interval counts milliseconds whatever its zone.
    const interval: CronJob = { ...JOB, expression: null, every: "PT5M" };
    expect(firingTimesKept({ ...cronFormOf(interval), timezone: "Asia/Tokyo" }, interval)).toBe(true);
    expect(firingTimesKept({ ...cronFormOf(interval), every: "PT10M" }, interval)).toBe(false);
  });
});

describe("the preview's query", () => {
  it("asks with the fields that say when it fires, the zone UTC when empty", () => {
    expect(previewQueryOfForm(form({ expression: "*/5 * * * *" }))).toEqual({
      query: { expression: "*/5 * * * *", timezone: "UTC", count: PREVIEW_COUNT },
    });
    expect(
      previewQueryOfForm(
        form({
          mode: "every",
          every: "PT30S",
          timezone: "Europe/Paris",
          startAt: isoToLocalInput(START),
          endAt: isoToLocalInput(END),
          maxRuns: "3",
          catchUp: "all",
          catchUpWindow: { count: "10", unitMs: 60_000 },
          overlap: "skip",
          jitter: { count: "30", unitMs: 1_000 },
        }),
      ),
    ).toEqual({
      query: {
        every: "PT30S",
        timezone: "Europe/Paris",
        startAt: START,
        endAt: END,
        maxRuns: 3,
        catchUp: "all",
        catchUpWindowMs: 600_000,
        overlap: "skip",
        jitterMs: 30_000,
        count: PREVIEW_COUNT,
      },
    });
  });

  it("waits for an expression or an interval, and says what it cannot read", () => {
    expect(previewQueryOfForm(form({ expression: "" }))).toEqual({
      empty: "Type a cron expression to see when it fires.",
    });
    expect(previewQueryOfForm(form({ mode: "every", every: "" }))).toHaveProperty("empty");
    expect(previewQueryOfForm(form({ expression: "* * * * *", maxRuns: "three" }))).toEqual({
      problem: "The run limit must be a whole number",
    });
  });
});
