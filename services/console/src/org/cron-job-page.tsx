import { type FormEvent, useMemo, useState } from "react";
import type { Options } from "uplot";
import { errorText, get, put } from "../api/client.ts";
import type { CronJobWithHistory, CronRun } from "../api/types.ts";
import { Chart, COLORS } from "../components/chart.tsx";
import { ErrorMessage, Loading, Notice } from "../components/messages.tsx";
import { StatusBadge } from "../components/status-badge.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { Time } from "../components/time.tsx";
import { formatDuration } from "../format.ts";
import { Link } from "../router.tsx";
import { useLoad } from "../use-load.ts";
import { CronPreview } from "./cron-preview.tsx";
import { FlowDetail } from "./flows/flow-link.tsx";
import { PolicyDetails } from "./policy/policy-details.tsx";

/** How late a run started: its record is made when the schedule fires. */
const latenessOf = (run: CronRun) => Math.max(0, Date.parse(run.createdAt) - Date.parse(run.scheduledFor));
const succeeded = (run: CronRun) => run.status === "Sent";

function RunsChart({ runs }: { runs: CronRun[] }) {
  const { data, options } = useMemo(() => {
    const ordered = [...runs].sort((a, b) => a.scheduledFor.localeCompare(b.scheduledFor));
    const x = ordered.map((run) => Date.parse(run.scheduledFor) / 1000);
    // One series per outcome, points only: a run's height is its lateness, its series its outcome.
    const sent = ordered.map((run) => (succeeded(run) ? latenessOf(run) : null));
    const failed = ordered.map((run) => (succeeded(run) ? null : latenessOf(run)));
    const options: Omit<Options, "width" | "height"> = {
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(10, max * 1.2)] } },
      axes: [{}, { label: "late by", size: 70, values: (_u, splits) => splits.map((ms) => formatDuration(ms)) }],
      series: [
        {},
        {
          label: "Sent",
          stroke: COLORS.sent,
          width: 0,
          points: { show: true, size: 8, fill: COLORS.sent },
          value: (_u, v) => formatDuration(v),
        },
        {
          label: "Failed",
          stroke: COLORS.failed,
          width: 0,
          points: { show: true, size: 9, fill: "#ffffff", width: 2 },
          value: (_u, v) => formatDuration(v),
        },
      ],
    };
    return { data: [x, sent, failed] as [number[], (number | null)[], (number | null)[]], options };
  }, [runs]);
  const failures = runs.filter((run) => !succeeded(run)).length;
  return (
    <Chart
      label={`Runs by scheduled time and lateness: ${runs.length - failures} sent (filled dots), ${failures} failed (hollow dots)`}
      options={options}
      data={data}
    />
  );
}

function RunsTable({ runs }: { runs: CronRun[] }) {
  return (
    <TableScroll label="Runs">
      <table>
        <caption className="visually-hidden">Runs, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Scheduled for</th>
            <th scope="col">Outcome</th>
            <th scope="col">Late by</th>
            <th scope="col">Attempts</th>
            <th scope="col">Response</th>
            <th scope="col">Duration</th>
            <th scope="col">Error</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((run) => (
            <tr key={run.id}>
              <td>
                <Time value={run.scheduledFor} />
              </td>
              <td>
                <StatusBadge status={run.status} />
              </td>
              <td>{formatDuration(latenessOf(run))}</td>
              <td>{run.attempts}</td>
              <td>{run.responseStatus ?? "—"}</td>
              <td>{formatDuration(run.durationMs)}</td>
              <td>{run.error ?? "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

function EditForm({ job, onSaved }: { job: CronJobWithHistory; onSaved: (job: CronJobWithHistory) => void }) {
  const [expression, setExpression] = useState(job.expression);
  const [timezone, setTimezone] = useState(job.timezone);
  const [destination, setDestination] = useState(job.destination);
  const [payload, setPayload] = useState(job.payload);
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      onSaved(await put<CronJobWithHistory>(`/api/cronjobs/${job.id}`, { expression, timezone, destination, payload }));
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form onSubmit={submit} className="edit-form" aria-labelledby="edit-title">
      <h2 id="edit-title">Edit</h2>
      <div className="form-columns">
        <div>
          <label htmlFor="cron-expression">Cron expression</label>
          <input
            id="cron-expression"
            className="mono"
            required
            value={expression}
            onChange={(event) => setExpression(event.target.value)}
            aria-describedby="cron-expression-help"
            spellCheck={false}
          />
          <p id="cron-expression-help" className="hint">
            minute hour day-of-month month day-of-week
          </p>
          <label htmlFor="cron-timezone">Time zone</label>
          <input
            id="cron-timezone"
            required
            value={timezone}
            onChange={(event) => setTimezone(event.target.value)}
            placeholder="UTC"
            spellCheck={false}
          />
          <label htmlFor="cron-destination">Destination</label>
          <input
            id="cron-destination"
            type="url"
            required
            value={destination}
            onChange={(event) => setDestination(event.target.value)}
          />
          <label htmlFor="cron-payload">Payload</label>
          <textarea id="cron-payload" rows={4} value={payload} onChange={(event) => setPayload(event.target.value)} />
        </div>
        <CronPreview expression={expression} timezone={timezone} />
      </div>
      <ErrorMessage>{error}</ErrorMessage>
      <button type="submit" className="primary" disabled={busy}>
        {busy ? "Saving…" : "Save changes"}
      </button>
    </form>
  );
}

export function CronJobPage({ id }: { id: string }) {
  const loaded = useLoad(() => get<CronJobWithHistory>(`/api/cronjobs/${encodeURIComponent(id)}`), id, 10_000);
  const [saved, setSaved] = useState<CronJobWithHistory>();
  const [notice, setNotice] = useState<string>();
  const [error, setError] = useState<string>();
  // The edit form starts over from the saved job after a save, not on each refresh of the page.
  const [formVersion, setFormVersion] = useState(0);
  const job = saved && loaded.data && saved.updatedAt > loaded.data.updatedAt ? saved : loaded.data;

  const setStatus = async (status: "Active" | "Disabled") => {
    setError(undefined);
    try {
      setSaved(await put<CronJobWithHistory>(`/api/cronjobs/${id}`, { status }));
      setNotice(status === "Active" ? "The cron job is enabled." : "The cron job is disabled: it stops running.");
      loaded.reload();
    } catch (failure) {
      setError(errorText(failure));
    }
  };

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
          <div className="actions-bar">
            <StatusBadge status={job.status} />
            {job.status === "Active" ? (
              <button type="button" onClick={() => setStatus("Disabled")}>
                Disable
              </button>
            ) : (
              <button type="button" className="primary" onClick={() => setStatus("Active")}>
                Enable
              </button>
            )}
          </div>
          {notice && <Notice>{notice}</Notice>}
          <ErrorMessage>{error}</ErrorMessage>
          <section className="card" aria-labelledby="cron-details">
            <h2 id="cron-details">Schedule</h2>
            <dl className="details">
              <div>
                <dt>Expression</dt>
                <dd className="mono">{job.expression}</dd>
              </div>
              <div>
                <dt>Time zone</dt>
                <dd>{job.timezone}</dd>
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
            </dl>
          </section>
          <PolicyDetails policy={job} />
          <section className="card">
            <EditForm
              key={formVersion}
              job={job}
              onSaved={(updated) => {
                setSaved(updated);
                setFormVersion((n) => n + 1);
                setNotice("Saved: the schedule follows the new expression.");
                loaded.reload();
              }}
            />
          </section>
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
