import { get } from "../api/client.ts";
import type { ServiceHealth } from "../api/types.ts";
import { ErrorMessage, Loading } from "../components/messages.tsx";
import { TableHead } from "../components/table.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { Time } from "../components/time.tsx";
import { formatDuration } from "../format.ts";
import { useLoad } from "../use-load.ts";

export function HealthPage() {
  const health = useLoad(() => get<ServiceHealth>("/api/admin/service-health"), "health", 10_000);
  const data = health.data;
  return (
    <>
      <h1>Service health</h1>
      <p className="hint">Refreshed every 10 seconds.</p>
      <ErrorMessage>{health.error}</ErrorMessage>
      {!data && health.loading && <Loading what="service health" />}
      {data && (
        <div className="overview-grid">
          <section className="card wide" aria-labelledby="queues-title">
            <h2 id="queues-title">Queues</h2>
            <TableScroll label="Queues">
              <table>
                <TableHead columns={["Queue", "Waiting", "Delayed", "Active", "Failed"]} />
                <tbody>
                  {Object.entries(data.queues).map(([name, counts]) => (
                    <tr key={name}>
                      <th scope="row">{name}</th>
                      <td>{counts.waiting}</td>
                      <td>{counts.delayed}</td>
                      <td>{counts.active}</td>
                      <td>{counts.failed}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableScroll>
            <p>
              <a href={data.bullBoard}>Open Bull Board (the queues' jobs)</a>
            </p>
            <p className="hint">Bull Board asks for the admin token itself (any user name, the token as password).</p>
          </section>
          <section className="card wide" aria-labelledby="workers-title">
            <h2 id="workers-title">Workers alive ({data.workers.length})</h2>
            {data.workers.length === 0 ? (
              <p className="message message-warning">
                <span aria-hidden="true">⚠ </span>No worker has reported in the last 15 seconds: nothing is being
                delivered.
              </p>
            ) : (
              <TableScroll label="Workers">
                <table>
                  <TableHead columns={["Worker", "Host", "PID", "Started", "Last seen"]} />
                  <tbody>
                    {data.workers.map((worker) => (
                      <tr key={worker.id}>
                        <td className="mono">{worker.id}</td>
                        <td>{worker.host}</td>
                        <td>{worker.pid}</td>
                        <td>
                          <Time value={worker.startedAt} />
                        </td>
                        <td>
                          <Time value={worker.lastSeenAt} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
            )}
          </section>
          <section className="card" aria-labelledby="reconciler-title">
            <h2 id="reconciler-title">Reconciler</h2>
            <dl className="details">
              <div>
                <dt>Last run</dt>
                <dd>{data.reconciler.lastRunAt ? <Time value={data.reconciler.lastRunAt} /> : "not yet"}</dd>
              </div>
              <div>
                <dt>Took</dt>
                <dd>{formatDuration(data.reconciler.durationMs)}</dd>
              </div>
            </dl>
          </section>
          <section className="card" aria-labelledby="notices-title">
            <h2 id="notices-title">Failure notices</h2>
            {!data.failureNotices.smtpConfigured && (
              <p className="message message-warning" id="notices-off">
                Off: <code>SMTP_URL</code> is not set, so no failure notice is ever sent.
              </p>
            )}
            <dl className="details">
              <div>
                <dt>Last sent</dt>
                <dd>
                  {data.failureNotices.lastSentAt ? (
                    <Time value={data.failureNotices.lastSentAt} />
                  ) : data.failureNotices.smtpConfigured ? (
                    "never"
                  ) : (
                    "never (SMTP_URL is not set)"
                  )}
                </dd>
              </div>
              <div>
                <dt>Sent in the last 24 h</dt>
                <dd>{data.failureNotices.sentLast24h}</dd>
              </div>
            </dl>
          </section>
        </div>
      )}
    </>
  );
}
