import { createElement } from "react";
import { renderToStaticMarkup } from "react-dom/server";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { CronRun } from "../../api/types.ts";
import { formatTime } from "../../format.ts";
import { cronJobRecord } from "../record-fixtures.ts";
import { createCronJob, editCronJob, listCronJobs, previewCronJob, setCronJobStatus } from "./cron-calls.ts";
import { cronFormOf, NEW_CRON_FORM } from "./cron-form.ts";
import { CronJobForm } from "./cron-job-form.tsx";
import { CronJobDetails, CronJobStatusBar, RunsTable } from "./cron-job-page.tsx";
import { CronJobsTable } from "./cron-jobs-page.tsx";

const START = "2027-03-01T09:00:00.000Z";
const END = "2027-03-31T18:00:00.000Z";

const job = cronJobRecord;

const INTERVAL = job({
  id: "cron_2",
  expression: null,
  every: "PT30S",
  startAt: START,
  endAt: END,
  maxRuns: 3,
  catchUp: "latest",
  overlap: "skip",
  jitterMs: 30_000,
});

const run = (change: Partial<CronRun>): CronRun => ({
  id: "run_1",
  cron: "PT30S",
  scheduledFor: "2027-03-01T09:00:00.000Z",
  status: "Sent",
  attempts: 1,
  responseStatus: 200,
  responseData: "ok",
  requestData: "{}",
  error: null,
  durationMs: 120,
  createdAt: "2027-03-01T09:00:00.250Z",
  updatedAt: "2027-03-01T09:00:00.400Z",
  ...change,
});

/** The text of each cell of each body row, tags and spaces between them dropped. */
function rowsOf(html: string): string[][] {
  const body = html.slice(html.indexOf("<tbody>"), html.indexOf("</tbody>"));
  return [...body.matchAll(/<tr[^>]*>(.*?)<\/tr>/g)].map(([, row = ""]) =>
    [...row.matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map(([, cell = ""]) => cell.replace(/<[^>]+>/g, "").trim()),
  );
}

/** Each term of a details list with its description's text. */
function detailsOf(html: string): Record<string, string> {
  return Object.fromEntries(
    [...html.matchAll(/<dt>(.*?)<\/dt><dd[^>]*>(.*?)<\/dd>/g)].map(([, term = "", text = ""]) => [
      term,
      text.replace(/<[^>]+>/g, ""),
    ]),
  );
}

describe("a cron job's details", () => {
  it("says each field of an interval's timing in words", () => {
    const details = detailsOf(renderToStaticMarkup(createElement(CronJobDetails, { job: INTERVAL })));
    expect(details).toMatchObject({
      Fires: "every 30 s PT30S",
      Window: `from ${formatTime(START)} until ${formatTime(END)}`,
      "Run limit": "at most 3 runs",
      Overlap: expect.stringMatching(/^overlap: skip \(a firing while the previous run is undecided is recorded/),
      Jitter: "jitter up to 30 s",
    });
    expect(details["Missed firings"]).toMatch(/^catch-up: latest \(/);
  });

  it("says an expression as it is, and the defaults as none", () => {
    const details = detailsOf(renderToStaticMarkup(createElement(CronJobDetails, { job: job({}) })));
    expect(details).toMatchObject({
      Fires: "*/5 * * * *",
      Window: "none: it runs from now on",
      "Run limit": "none",
      Jitter: "no jitter",
    });
    expect(details["Missed firings"]).toMatch(/^catch-up: skip/);
    expect(details.Overlap).toMatch(/^overlap: allow/);
  });

  it("shows the job's labels as key:value chips and its callback URL, as the event page does", () => {
    const html = renderToStaticMarkup(
      createElement(CronJobDetails, {
        job: job({ labels: { team: "ops", tier: "gold" }, callbackUrl: "https://x.test/cb" }),
      }),
    );
    expect(detailsOf(html)).toMatchObject({ Labels: "team:opstier:gold", "Callback URL": "https://x.test/cb" });
    expect([...html.matchAll(/<span class="tag mono" title="([^"]*)">/g)].map(([, pair]) => pair)).toEqual([
      "team:ops",
      "tier:gold",
    ]);
  });

  it("shows no labels or callback URL row for a job without them", () => {
    const details = detailsOf(renderToStaticMarkup(createElement(CronJobDetails, { job: job({}) })));
    expect(details).toHaveProperty("Destination", "https://example.com/hook");
    expect(details).not.toHaveProperty("Labels");
    expect(details).not.toHaveProperty("Callback URL");
  });

  it("shows a Completed job's badge, and no button to enable or disable it", () => {
    const html = renderToStaticMarkup(
      createElement(CronJobStatusBar, { job: job({ status: "Completed" }), onStatus: () => {} }),
    );
    expect(html).toContain('<span class="badge badge-muted"><span aria-hidden="true">✓</span> Completed</span>');
    expect(html).not.toContain("<button");
    expect(html).toContain("it no longer runs");
  });
});

describe("a cron job's runs", () => {
  it("show a Skipped run with its badge and no lateness", () => {
    const html = renderToStaticMarkup(
      createElement(RunsTable, {
        runs: [run({ id: "run_2", scheduledFor: "2027-03-01T09:00:30.000Z", status: "Skipped", attempts: 0 }), run({})],
      }),
    );
    const rows = rowsOf(html);
    expect(rows.map(([, outcome, late, attempts]) => [outcome, late, attempts])).toEqual([
      ["↷ Skipped", "—", "0"],
      ["✓ Sent", "250 ms", "1"],
    ]);
    expect(html).toContain('<span class="badge badge-muted"><span aria-hidden="true">↷</span> Skipped</span>');
  });

  it("show a run's callback: its status, attempts and last answer, and a dash without one", () => {
    const callback = {
      url: "https://x.test/cb",
      type: "cron.run.failed" as const,
      status: "Failed" as const,
      attempts: 3,
      lastAttemptAt: "2027-03-01T09:00:05.000Z",
      lastResponseStatus: 503,
      lastResponseBody: "down",
      lastError: "Receiver answered 503",
    };
    const html = renderToStaticMarkup(createElement(RunsTable, { runs: [run({ id: "run_2", callback }), run({})] }));
    expect(rowsOf(html).map((cells) => cells.at(-1))).toEqual(["Failed, 3 attempts, HTTP 503", "—"]);
  });
});

describe("the cron jobs table", () => {
  it("lists each job's status and timing in words", () => {
    const html = renderToStaticMarkup(
      createElement(CronJobsTable, {
        jobs: [
          job({}),
          { ...INTERVAL, status: "Completed", nextExecutionStatus: "Completed", nextExecutionDate: undefined },
        ],
      }),
    );
    const rows = rowsOf(html);
    expect(rows.map(([id, status, fires, zone, next]) => [id, status, fires, zone, next])).toEqual([
      ["cron_1", "● Active", "*/5 * * * *", "UTC", formatTime("2027-03-01T12:05:00.000Z")],
      [
        "cron_2",
        "✓ Completed",
        `every 30 sfrom ${formatTime(START)} until ${formatTime(END)}, at most 3 runs, catch-up: latest, overlap: skip, jitter up to 30 s`,
        "UTC",
        "—",
      ],
    ]);
  });
});

describe("the cron job form", () => {
  const render = (props: Partial<Parameters<typeof CronJobForm>[0]>) =>
    renderToStaticMarkup(
      createElement(CronJobForm, {
        initial: NEW_CRON_FORM,
        submitLabel: "Create the cron job",
        onSaved: () => {},
        ...props,
      }),
    );

  it("offers every field of a new job, an expression first", () => {
    const html = render({});
    for (const label of ["Destination", "Payload", "Cron expression", "Time zone", "Start", "End", "Run limit"]) {
      expect(html).toContain(`>${label}</label>`);
    }
    for (const label of ["Jitter", "Missed firings", "Overlap"]) expect(html).toContain(`>${label}</label>`);
    expect(html).toContain('type="datetime-local"');
    expect(html).toContain("Next firing times");
    expect(html).not.toContain("Catch-up window");
  });

  it("edits an interval job with its presets and shows the catch-up window with catch-up all", () => {
    const html = render({
      initial: { ...cronFormOf(INTERVAL), catchUp: "all" },
      job: INTERVAL,
      submitLabel: "Save changes",
    });
    expect(html).toMatch(/<input type="radio" name="[^"]*" checked="" value="every"\/>At an interval/);
    expect(html).toContain('<option value="PT30S" selected="">every 30 seconds</option>');
    expect(html).toContain('<option value="P1D">every day</option>');
    expect(html).toContain('value="PT30S"');
    expect(html).toContain("Catch-up window");
    expect(html).not.toContain(">Cron expression</label>");
  });
});

describe("the cron job pages' calls", () => {
  const calls: { method: string; url: string; body: unknown }[] = [];
  const answer = (status: number, body: unknown) =>
    vi.fn(async (url: string, init: RequestInit) => {
      calls.push({ method: init.method ?? "GET", url, body: init.body ? JSON.parse(String(init.body)) : undefined });
      return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
    });

  afterEach(() => {
    calls.length = 0;
    vi.unstubAllGlobals();
  });

  it("create with POST, edit with PUT, list and preview with GET, at /api/cron-jobs", async () => {
    vi.stubGlobal("fetch", answer(200, { ...INTERVAL, history: [] }));
    await createCronJob({ destination: "https://example.com/hook", payload: "{}", every: "PT30S" });
    await editCronJob("cron_2", { startAt: null, maxRuns: 5 });
    await setCronJobStatus("cron_2", "Disabled");
    await listCronJobs();
    await previewCronJob({ every: "PT30S", timezone: "UTC", maxRuns: 3, count: 5 });
    expect(calls).toEqual([
      {
        method: "POST",
        url: "/api/cron-jobs",
        body: { destination: "https://example.com/hook", payload: "{}", every: "PT30S" },
      },
      { method: "PUT", url: "/api/cron-jobs/cron_2", body: { startAt: null, maxRuns: 5 } },
      { method: "PUT", url: "/api/cron-jobs/cron_2", body: { status: "Disabled" } },
      { method: "GET", url: "/api/cron-jobs", body: undefined },
      { method: "GET", url: "/api/cron-jobs/preview?every=PT30S&timezone=UTC&maxRuns=3&count=5", body: undefined },
    ]);
  });

  it("fail with the API's own sentence", async () => {
    vi.stubGlobal("fetch", answer(400, { message: "Give either 'expression' or 'every'" }));
    await expect(createCronJob({ destination: "https://example.com/hook", payload: "{}" })).rejects.toThrow(
      "Give either 'expression' or 'every'",
    );
  });
});
