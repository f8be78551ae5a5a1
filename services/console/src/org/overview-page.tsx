import { useMemo } from "react";
import type { AlignedData, Options } from "uplot";
import { get } from "../api/client.ts";
import type { Stats } from "../api/types.ts";
import { barPaths, Chart, COLORS, legendValue, timeLegend } from "../components/chart.tsx";
import { ErrorMessage, Loading } from "../components/messages.tsx";
import { stack } from "../components/stack.ts";
import { TableHead } from "../components/table.tsx";
import { TableScroll } from "../components/table-scroll.tsx";
import { formatCount, formatDuration, formatTime } from "../format.ts";
import { Link } from "../router.tsx";
import { useLoad } from "../use-load.ts";

/** What ended in a bucket: deliveries (events and cron runs), stacked into the bucket's total. */
const DELIVERIES = [
  { key: "failed", label: "Failed", color: COLORS.failed },
  { key: "sent", label: "Sent", color: COLORS.sent },
] as const;

/** The window's span, for the legend's time when nothing is hovered. */
function windowOf(stats: Stats): string {
  const first = stats.buckets[0];
  return first ? `since ${formatTime(first.start)}` : "";
}

function OutcomesChart({ stats }: { stats: Stats }) {
  const { data, options } = useMemo(() => {
    const x = stats.buckets.map((bucket) => Date.parse(bucket.start) / 1000);
    // Bottom of the stack first: sent, then failed on top. Retries are attempts, not deliveries: a
    // line of their own beside the bars, never a layer of the stack.
    const layers = [...DELIVERIES].reverse().map((outcome) => stats.buckets.map((bucket) => bucket[outcome.key]));
    // A layer with nothing in a bucket draws no bar there (not a flat one along the axis).
    const [, ...stacked] = stack(x, layers).map((values, layer) =>
      layer === 0
        ? values
        : values.map((value, index): number | null => ((layers[layer - 1]?.[index] ?? 0) > 0 ? value : null)),
    );
    // Drawn tallest first so each smaller layer stays visible in front of the one above it.
    const retried = stats.buckets.map((bucket) => bucket.retried);
    const drawn = [x, ...stacked.reverse(), retried] as AlignedData;
    const raw = DELIVERIES.map((outcome) => stats.buckets.map((bucket) => bucket[outcome.key]));
    const options: Omit<Options, "width" | "height"> = {
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
      // Whole counts only on the axis.
      axes: [
        {},
        {
          label: "deliveries; retried attempts",
          incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000],
        },
      ],
      series: [
        timeLegend(windowOf(stats)),
        ...DELIVERIES.map((outcome, index) => ({
          label: `${outcome.label} deliveries`,
          stroke: outcome.color,
          fill: outcome.color,
          paths: barPaths,
          points: { show: false },
          // The legend shows each outcome's own count (not the stack's running total), or the
          // window's total when nothing is hovered.
          value: legendValue(
            (_v, idx) => formatCount(raw[index]?.[idx] ?? 0),
            `${formatCount(stats.totals[outcome.key])} in all`,
          ),
        })),
        {
          label: "Retried attempts",
          stroke: COLORS.retried,
          width: 2,
          dash: [6, 4],
          points: { show: true, size: 5, fill: COLORS.retried },
          value: legendValue((v) => formatCount(v), `${formatCount(stats.totals.retried)} in all`),
        },
      ],
    };
    return { data: drawn, options };
  }, [stats]);
  return (
    <Chart
      label={`Deliveries per ${stats.bucket} by outcome: ${stats.totals.sent} sent, ${stats.totals.failed} failed (bars); failed attempts retried: ${stats.totals.retried} (dashed line), in the window`}
      options={options}
      data={data}
      table={
        <table>
          <caption className="visually-hidden">Deliveries and retried attempts per {stats.bucket}</caption>
          <TableHead columns={["From", "Sent", "Failed", "Retried attempts"]} />
          <tbody>
            {stats.buckets.map((bucket) => (
              <tr key={bucket.start}>
                <th scope="row">{formatTime(bucket.start)}</th>
                <td>{bucket.sent}</td>
                <td>{bucket.failed}</td>
                <td>{bucket.retried}</td>
              </tr>
            ))}
          </tbody>
        </table>
      }
    />
  );
}

function LatenessChart({ stats }: { stats: Stats }) {
  const { data, options } = useMemo(() => {
    const x = stats.buckets.map((bucket) => Date.parse(bucket.start) / 1000);
    const p50 = stats.buckets.map((bucket) => bucket.latenessMs.p50);
    const p99 = stats.buckets.map((bucket) => bucket.latenessMs.p99);
    const options: Omit<Options, "width" | "height"> = {
      scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(10, (max ?? 0) * 1.2)] } },
      axes: [{}, { label: "late by", size: 70, values: (_u, splits) => splits.map((ms) => formatDuration(ms)) }],
      // Nothing hovered: no value (a percentile of percentiles would mean nothing).
      series: [
        timeLegend(windowOf(stats)),
        { label: "p50", stroke: COLORS.p50, width: 2, value: legendValue((v) => formatDuration(v)), spanGaps: false },
        { label: "p99", stroke: COLORS.p99, width: 2, dash: [6, 4], value: legendValue((v) => formatDuration(v)) },
      ],
    };
    return { data: [x, p50, p99] as [number[], (number | null)[], (number | null)[]], options };
  }, [stats]);
  return (
    <Chart
      label={`First-attempt lateness per ${stats.bucket}, median and 99th percentile`}
      options={options}
      data={data}
      table={
        <table>
          <caption className="visually-hidden">First-attempt lateness per {stats.bucket}</caption>
          <TableHead columns={["From", "p50", "p99"]} />
          <tbody>
            {stats.buckets.map((bucket) => (
              <tr key={bucket.start}>
                <th scope="row">{formatTime(bucket.start)}</th>
                <td>{formatDuration(bucket.latenessMs.p50)}</td>
                <td>{formatDuration(bucket.latenessMs.p99)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      }
    />
  );
}

function Usage({ usage }: { usage: Stats["usage"] }) {
  const share = usage.limit > 0 ? usage.used / usage.limit : 0;
  return (
    <section className="card" aria-labelledby="usage-title">
      <h2 id="usage-title">Usage in {usage.month}</h2>
      <p className="big-number">
        {formatCount(usage.used)} <span className="of">of {formatCount(usage.limit)} events</span>
      </p>
      <meter
        min={0}
        max={usage.limit}
        value={usage.used}
        low={usage.limit * 0.8}
        high={usage.limit * 0.95}
        optimum={0}
        aria-label={`Monthly usage: ${usage.used} of ${usage.limit}`}
      />
      <p className="hint">
        {share >= 1
          ? "The limit is reached: new events are refused until next month."
          : `${(share * 100).toFixed(share < 0.1 ? 1 : 0)}% used`}
      </p>
    </section>
  );
}

export function OverviewPage() {
  const stats = useLoad(() => get<Stats>("/api/stats", { bucket: "hour" }), "stats", 30_000);
  return (
    <>
      <h1>Overview</h1>
      <p className="hint">The last 24 hours, per hour; refreshed every 30 seconds.</p>
      <ErrorMessage>{stats.error}</ErrorMessage>
      {!stats.data && stats.loading && <Loading what="statistics" />}
      {stats.data && (
        <div className="overview-grid">
          <section className="card totals" aria-labelledby="totals-title">
            <h2 id="totals-title">Last 24 hours</h2>
            <dl className="stat-list">
              <div>
                <dt>Sent</dt>
                <dd>{formatCount(stats.data.totals.sent)}</dd>
              </div>
              <div>
                <dt>Failed</dt>
                <dd>{formatCount(stats.data.totals.failed)}</dd>
              </div>
              <div>
                <dt>Retried attempts</dt>
                <dd>{formatCount(stats.data.totals.retried)}</dd>
              </div>
            </dl>
          </section>
          <Usage usage={stats.data.usage} />
          <section className="card wide" aria-labelledby="outcomes-title">
            <h2 id="outcomes-title">Deliveries per hour by outcome</h2>
            <OutcomesChart stats={stats.data} />
          </section>
          <section className="card wide" aria-labelledby="lateness-title">
            <h2 id="lateness-title">First-attempt lateness per hour</h2>
            <LatenessChart stats={stats.data} />
          </section>
          <section className="card wide" aria-labelledby="failing-title">
            <h2 id="failing-title">Destinations failing most</h2>
            {stats.data.failingDestinations.length === 0 ? (
              <p>No failed deliveries in the last 24 hours.</p>
            ) : (
              <TableScroll label="Destinations failing most">
                <table>
                  <TableHead columns={["Destination", "Failures", "Last error"]} />
                  <tbody>
                    {stats.data.failingDestinations.map((row) => (
                      <tr key={row.destination}>
                        <td className="url">{row.destination}</td>
                        <td>{row.failures}</td>
                        <td>{row.lastError ?? "—"}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </TableScroll>
            )}
            <p>
              <Link to="/events?status=Failed%20To%20Send">See failed events</Link>
            </p>
          </section>
        </div>
      )}
    </>
  );
}
