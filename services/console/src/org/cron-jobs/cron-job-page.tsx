import { type ReactNode, useMemo, useState } from "react";
import type { Options } from "uplot";
import type { CronJob, CronJobWithHistory, CronRun, EditableCronJobStatus } from "../../api/types.ts";
import { Chart, COLORS, dataTimeAxis, dataTimeScale, legendValue, timeLegend } from "../../components/chart.tsx";
import { Dialog, DialogActions } from "../../components/dialog.tsx";
import { ErrorMessage, Loading, Notice } from "../../components/messages.tsx";
import { StatusBadge } from "../../components/status-badge.tsx";
import { TableHead } from "../../components/table.tsx";
import { TableScroll } from "../../components/table-scroll.tsx";
import { Time } from "../../components/time.tsx";
import { formatDuration, formatTime } from "../../format.ts";
import { Link, navigate } from "../../router.tsx";
import { useAction } from "../../use-action.ts";
import { useLoad } from "../../use-load.ts";
import { callbackAnswer } from "../callback-outcome.tsx";
import { FlowDetail } from "../flows/flow-link.tsx";
import { CallbackUrlDetail, LabelsDetail } from "../outcome-details.tsx";
import { PolicyDetails } from "../policy/policy-details.tsx";
import { deleteCronJob, getCronJob, setCronJobStatus } from "./cron-calls.ts";
import { cronFormOf } from "./cron-form.ts";
import { CronJobForm } from "./cron-job-form.tsx";
import {
  CATCH_UP_MEANINGS,
  describeCatchUp,
  describeEvery,
  describeJitter,
  describeMaxRuns,
  describeOverlap,
  describeWindow,
  OVERLAP_MEANINGS,
} from "./describe-schedule.ts";

/** How late a run started: its record is made when the schedule fires. */
const latenessOf = (run: CronRun) => Math.max(0, Date.parse(run.createdAt) - Date.parse(run.scheduledFor));
const succeeded = (run: CronRun) => run.status === "Sent";
/** A Skipped run (overlap: skip) was never sent: it has no lateness and no outcome of delivery. */
const skipped = (run: CronRun) => run.status === "Skipped";

/** From the first run's time to the last one's, for the legend. */
function spanOf(ordered: CronRun[]): string {
  const first = ordered[0];
  const last = ordered.at(-1);
  if (!first || !last) return "no run";
  if (first === last) return formatTime(first.scheduledFor);
  return `${formatTime(first.scheduledFor)} – ${formatTime(last.scheduledFor)}`;
}

function RunsChart({ runs }: { runs: CronRun[] }) {
  const { data, options } = useMemo(() => {
    const ordered = runs.filter((run) => !skipped(run)).sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
    const x = ordered.map((run) => Date.parse(run.scheduledFor) / 1000);
    // One series per outcome, points only: a run's height is its lateness, its series its outcome.
    const sent = ordered.map((run) => (succeeded(run) ? latenessOf(run) : null));
    const failed = ordered.map((run) => (succeeded(run) ? null : latenessOf(run)));
    const sentRuns = sent.filter((value) => value !== null).length;
    const runsWord = (n: number) => `${n} ${n === 1 ? "run" : "runs"}`;
    const options: Omit<Options, "width" | "height"> = {
      scales: { x: dataTimeScale, y: { range: (_u, _min, max) => [0, Math.max(10, max * 1.2)] } },
      axes: [
        dataTimeAxis,
        { label: "late by", size: 70, values: (_u, splits) => splits.map((ms) => formatDuration(ms)) },
      ],
      // Nothing hovered: the legend says how many runs each dot stands for, and over which days.
      series: [
        timeLegend(spanOf(ordered)),
        {
          label: "Sent",
          stroke: COLORS.sent,
          width: 0,
          points: { show: true, size: 8, fill: COLORS.sent },
          value: legendValue((v) => `late by ${formatDuration(v)}`, runsWord(sentRuns)),
        },
        {
          label: "Failed",
          stroke: COLORS.failed,
          width: 0,
          points: { show: true, size: 9, fill: "#ffffff", width: 2 },
          value: legendValue((v) => `late by ${formatDuration(v)}`, runsWord(ordered.length - sentRuns)),
        },
      ],
    };
    return { data: [x, sent, failed] as [number[], (number | null)[], (number | null)[]], options };
  }, [runs]);
  const skips = runs.filter(skipped).length;
  const failures = runs.filter((run) => !succeeded(run) && !skipped(run)).length;
  const notShown = skips > 0 ? `; ${skips} skipped, not sent (not shown)` : "";
  return (
    <Chart
      label={`Runs by scheduled time and lateness: ${runs.length - failures - skips} sent (filled dots), ${failures} failed (hollow dots)${notShown}`}
      options={options}
      data={data}
    />
  );
}

/** The runs, newest first: a Skipped one (overlap: skip) has its badge and no lateness. */
export function RunsTable({ runs }: { runs: CronRun[] }) {
  return (
    <TableScroll label="Runs">
      <table>
        <caption className="visually-hidden">Runs, newest first</caption>
        <TableHead
          columns={["Scheduled for", "Outcome", "Late by", "Attempts", "Response", "Duration", "Error", "Callback"]}
        />
        <tbody>
          {runs.map((run) => (
            <tr key={run.id}>
              <td>
                <Time value={run.scheduledFor} />
              </td>
              <td>
                <StatusBadge status={run.status} />
              </td>
              <td>{skipped(run) ? "—" : formatDuration(latenessOf(run))}</td>
              <td>{run.attempts}</td>
              <td>{run.responseStatus ?? "—"}</td>
              <td>{formatDuration(run.durationMs)}</td>
              <td>{run.error ?? "—"}</td>
              <td>
                {run.callback
                  ? `${run.callback.status}, ${run.callback.attempts} ${run.callback.attempts === 1 ? "attempt" : "attempts"}, ${callbackAnswer(run.callback)}`
                  : "—"}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

/**
 * A cron job's details: its timing in words (when it fires, its window, run limit, catch-up, overlap
 * and jitter), its destination, flow, labels and callback URL.
 */
export function CronJobDetails({ job }: { job: CronJob }) {
  const window = describeWindow(job.startAt, job.endAt);
  const limit = describeMaxRuns(job.maxRuns);
  return (
    <dl className="details">
      <div>
        <dt>Fires</dt>
        {job.every ? (
          <dd>
            {describeEvery(job.every)} <span className="mono tag">{job.every}</span>
          </dd>
        ) : (
          <dd className="mono">{job.expression}</dd>
        )}
      </div>
      <div>
        <dt>Time zone</dt>
        <dd>{job.timezone}</dd>
      </div>
      <div>
        <dt>Window</dt>
        <dd>{window ?? "none: it runs from now on"}</dd>
      </div>
      <div>
        <dt>Run limit</dt>
        <dd>{limit ?? "none"}</dd>
      </div>
      <div>
        <dt>Missed firings</dt>
        <dd>
          {describeCatchUp(job.catchUp, job.catchUpWindowMs)}
          <span className="hint"> ({CATCH_UP_MEANINGS[job.catchUp]})</span>
        </dd>
      </div>
      <div>
        <dt>Overlap</dt>
        <dd>
          {describeOverlap(job.overlap)}
          <span className="hint"> ({OVERLAP_MEANINGS[job.overlap]})</span>
        </dd>
      </div>
      <div>
        <dt>Jitter</dt>
        <dd>{describeJitter(job.jitterMs)}</dd>
      </div>
      <div>
        <dt>Next run</dt>
        <dd>
          <Time value={job.nextExecutionDate} /> ({job.nextExecutionStatus})
        </dd>
      </div>
      <div>
        <dt>Destination</dt>
        <dd className="url">{job.destination}</dd>
      </div>
      <FlowDetail flowKey={job.flowKey} />
      <LabelsDetail labels={job.labels} />
      <CallbackUrlDetail callbackUrl={job.callbackUrl} />
    </dl>
  );
}

/** What the status bar says of a job's status, and the button that changes it (none once Completed). */
export function CronJobStatusBar({
  job,
  onStatus,
  children,
}: {
  job: CronJob;
  onStatus: (status: EditableCronJobStatus) => void;
  /** More actions on the same bar (Delete). */
  children?: ReactNode;
}) {
  return (
    <div className="actions-bar">
      <StatusBadge status={job.status} />
      {job.status === "Active" && (
        <button type="button" onClick={() => onStatus("Disabled")}>
          Disable
        </button>
      )}
      {job.status === "Disabled" && (
        <button type="button" className="primary" onClick={() => onStatus("Active")}>
          Enable
        </button>
      )}
      {job.status === "Completed" && (
        <p>It made its last run (its run limit or the end of its window): it no longer runs.</p>
      )}
      {children}
    </div>
  );
}

/** Deletes the job once confirmed in a dialog, then goes back to the list. */
function DeleteCronJob({ id }: { id: string }) {
  const [open, setOpen] = useState(false);
  const { busy, error, run } = useAction();
  const remove = () =>
    run(async () => {
      await deleteCronJob(id);
      navigate("/cron-jobs");
    });
  return (
    <>
      <button type="button" className="danger" onClick={() => setOpen(true)}>
        Delete
      </button>
      <Dialog title="Delete the cron job" open={open} onClose={() => setOpen(false)}>
        <p>
          The cron job <span className="mono">{id}</span> stops running at once, and its runs of the last 30 days are
          deleted with it. This cannot be undone.
        </p>
        <DialogActions
          confirm="Delete the cron job"
          busyConfirm="Deleting…"
          tone="danger"
          onConfirm={remove}
          busy={busy}
          onCancel={() => setOpen(false)}
          error={error}
        />
      </Dialog>
    </>
  );
}

export function CronJobPage({ id }: { id: string }) {
  const loaded = useLoad(() => getCronJob(id), id, 10_000);
  const [saved, setSaved] = useState<CronJobWithHistory>();
  const [notice, setNotice] = useState<string>();
  const { error, run } = useAction();
  // The edit form starts over from the saved job after a save, not on each refresh of the page.
  const [formVersion, setFormVersion] = useState(0);
  const job = saved && loaded.data && saved.updatedAt > loaded.data.updatedAt ? saved : loaded.data;

  const setStatus = (status: EditableCronJobStatus) =>
    run(async () => {
      setSaved(await setCronJobStatus(id, status));
      setNotice(status === "Active" ? "The cron job is enabled." : "The cron job is disabled: it stops running.");
      loaded.reload();
    });

  return (
    <>
      <p>
        <Link to="/cron-jobs">← Cron jobs</Link>
      </p>
      <h1>
        Cron job <span className="mono">{id}</span>
      </h1>
      <ErrorMessage>{loaded.error}</ErrorMessage>
      {!job && loaded.loading && <Loading what="the cron job" />}
      {job && (
        <>
          <CronJobStatusBar job={job} onStatus={setStatus}>
            <DeleteCronJob id={id} />
          </CronJobStatusBar>
          {notice && <Notice>{notice}</Notice>}
          <ErrorMessage>{error}</ErrorMessage>
          <section className="card" aria-labelledby="cron-details">
            <h2 id="cron-details">Details</h2>
            <CronJobDetails job={job} />
          </section>
          <PolicyDetails policy={job} />
          {job.status !== "Completed" && (
            <section className="card" aria-labelledby="cron-edit">
              <h2 id="cron-edit">Edit</h2>
              <CronJobForm
                key={formVersion}
                initial={cronFormOf(job)}
                job={job}
                submitLabel="Save changes"
                onSaved={(updated) => {
                  setSaved(updated);
                  setFormVersion((n) => n + 1);
                  setNotice("Saved: the next runs follow the new settings.");
                  loaded.reload();
                }}
              />
            </section>
          )}
          <section className="card" aria-labelledby="cron-runs">
            <h2 id="cron-runs">Runs of the last 30 days</h2>
            {job.history.length === 0 ? (
              <p>No run yet.</p>
            ) : (
              <>
                <RunsChart runs={job.history} />
                <RunsTable runs={job.history} />
              </>
            )}
          </section>
        </>
      )}
    </>
  );
}
