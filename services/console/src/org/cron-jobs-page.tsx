import { get } from "../api/client.ts";
import type { CronJob } from "../api/types.ts";
import { ErrorMessage, Loading } from "../components/messages.tsx";
import { StatusBadge } from "../components/status-badge.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { Time } from "../components/time.tsx";
import { Link } from "../router.tsx";
import { useLoad } from "../use-load.ts";

export function CronJobsPage() {
  const jobs = useLoad(() => get<CronJob[]>("/api/cronjobs"), "cron-jobs");
  return (
    <>
      <h1>Cron jobs</h1>
      <ErrorMessage>{jobs.error}</ErrorMessage>
      {!jobs.data && jobs.loading && <Loading what="cron jobs" />}
      {jobs.data && jobs.data.length === 0 && (
        <p>This organization has no cron job yet (POST /api/cronjobs creates one).</p>
      )}
      {jobs.data && jobs.data.length > 0 && (
        <TableScroll label="Cron jobs">
          <table>
            <thead>
              <tr>
                <th scope="col">Cron job</th>
                <th scope="col">Status</th>
                <th scope="col">Expression</th>
                <th scope="col">Time zone</th>
                <th scope="col">Next run</th>
                <th scope="col">Destination</th>
              </tr>
            </thead>
            <tbody>
              {jobs.data.map((job) => (
                <tr key={job.id}>
                  <td>
                    <Link to={`/cron-jobs/${job.id}`} className="mono">
                      {job.id}
                    </Link>
                  </td>
                  <td>
                    <StatusBadge status={job.status} />
                  </td>
                  <td className="mono">{job.expression}</td>
                  <td>{job.timezone}</td>
                  <td>
                    <Time value={job.nextExecutionDate} />
                  </td>
                  <td className="url">{job.destination}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      )}
    </>
  );
}
