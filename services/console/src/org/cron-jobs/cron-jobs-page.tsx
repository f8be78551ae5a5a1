import { useState } from "react";
import type { CronJob } from "../../api/types.ts";
import { Dialog } from "../../components/dialog.tsx";
import { ErrorMessage, Loading } from "../../components/messages.tsx";
import { StatusBadge } from "../../components/status-badge.tsx";
import { TableHead } from "../../components/table.tsx";
import { TableScroll } from "../../components/table-scroll.tsx";
import { Time } from "../../components/time.tsx";
import { Link, navigate } from "../../router.tsx";
import { useLoad } from "../../use-load.ts";
import { listCronJobs } from "./cron-calls.ts";
import { NEW_CRON_FORM } from "./cron-form.ts";
import { CronJobForm } from "./cron-job-form.tsx";
import { describeFiring, timingExtras } from "./describe-schedule.ts";

/** The organization's cron jobs: each one's status, its timing in words, its next run. */
export function CronJobsTable({ jobs }: { jobs: readonly CronJob[] }) {
  return (
    <TableScroll label="Cron jobs">
      <table className="cron-jobs-table">
        <TableHead columns={["Cron job", "Status", "Fires", "Time zone", "Next run", "Destination"]} />
        <tbody>
          {jobs.map((job) => (
            <tr key={job.id}>
              <td className="cron-id">
                <Link to={`/cron-jobs/${job.id}`} className="mono">
                  {job.id}
                </Link>
              </td>
              <td>
                <StatusBadge status={job.status} />
              </td>
              <td className="timing">
                <span className={job.every ? undefined : "mono"}>{describeFiring(job)}</span>
                {timingExtras(job).length > 0 && <div className="hint">{timingExtras(job).join(", ")}</div>}
              </td>
              <td>{job.timezone}</td>
              <td className="next-run">
                <Time value={job.nextExecutionDate} />
              </td>
              <td className="url">{job.destination}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

export function CronJobsPage() {
  const jobs = useLoad(listCronJobs, "cron-jobs");
  const [creating, setCreating] = useState(false);
  return (
    <>
      <h1>Cron jobs</h1>
      <div className="actions-bar">
        <button type="button" className="primary" onClick={() => setCreating(true)}>
          New cron job
        </button>
      </div>
      <ErrorMessage>{jobs.error}</ErrorMessage>
      {!jobs.data && jobs.loading && <Loading what="cron jobs" />}
      {jobs.data && jobs.data.length === 0 && (
        <p>This organization has no cron job yet: New cron job (or POST /api/cron-jobs) creates one.</p>
      )}
      {jobs.data && jobs.data.length > 0 && <CronJobsTable jobs={jobs.data} />}
      <Dialog title="New cron job" open={creating} onClose={() => setCreating(false)} wide>
        {creating && (
          <CronJobForm
            initial={NEW_CRON_FORM}
            submitLabel="Create the cron job"
            onCancel={() => setCreating(false)}
            onSaved={(job) => {
              setCreating(false);
              navigate(`/cron-jobs/${encodeURIComponent(job.id)}`);
            }}
          />
        )}
      </Dialog>
    </>
  );
}
