import { type ServiceStatus, withTimeout } from "@punctual/core";
import { Gauge, type Registry } from "prom-client";

/** A scrape waits at most this long for each dependency and for the workers' status in Redis. */
export const SERVICE_READ_TIMEOUT_MS = 1_000;

/** What the API reads at each scrape, so that alerts see the service as the operator's view does. */
export interface ServiceReads {
  /** Resolves when Postgres answers (a `SELECT 1`). */
  postgres: () => Promise<unknown>;
  /** Resolves when Redis answers (a `PING`). */
  redis: () => Promise<unknown>;
  /** The live workers and the reconciler's last run, as the workers keep them in Redis. */
  status: () => Promise<Pick<ServiceStatus, "workers" | "reconciler">>;
}

/** True when the check answers within the limit; false when it fails or is too slow. */
const answers = (check: () => Promise<unknown>) =>
  withTimeout(
    Promise.resolve()
      .then(check)
      .then(() => true),
    SERVICE_READ_TIMEOUT_MS,
    false,
  ).catch(() => false);

/**
 * One read shared by the gauges collected in the same scrape (prom-client collects them together),
 * so a scrape costs one status read, not one per gauge. Forgotten once it has settled.
 */
function sharedPerScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () => {
    pending ??= read().finally(() => {
      pending = undefined;
    });
    return pending;
  };
}

/**
 * The gauges alerts need and no single process counts: whether Postgres and Redis answer this API,
 * how many workers are alive and when the reconciler last ran. Workers write the last two into
 * Redis (service-status.ts in core); reading them here lets one scrape of any API answer for the
 * whole deployment, whichever worker holds the reconciler's lock.
 */
export function registerServiceGauges(registry: Registry, reads: ServiceReads): void {
  new Gauge({
    name: "punctual_dependency_up",
    help: "1 when the dependency (postgres, redis) answered this scrape within 1 s, else 0",
    labelNames: ["dependency"] as const,
    registers: [registry],
    async collect() {
      const [postgres, redis] = await Promise.all([answers(reads.postgres), answers(reads.redis)]);
      this.set({ dependency: "postgres" }, postgres ? 1 : 0);
      this.set({ dependency: "redis" }, redis ? 1 : 0);
    },
  });

  const status = sharedPerScrape(() =>
    withTimeout(reads.status(), SERVICE_READ_TIMEOUT_MS, undefined).catch(() => undefined),
  );
  new Gauge({
    name: "punctual_live_workers",
    help: "Worker processes whose heartbeat in Redis is live (renewed every 5 s, gone 15 s after the last); absent while Redis does not answer",
    registers: [registry],
    async collect() {
      const read = await status();
      // While Redis does not answer the series is absent (removed), not stale and not a made-up 0.
      if (read) this.set(read.workers.length);
      else this.remove();
    },
  });
  new Gauge({
    name: "punctual_reconciler_last_run_timestamp_seconds",
    help: "When the reconciler's last run started, in Unix seconds (0 before the first run); absent while Redis does not answer",
    registers: [registry],
    async collect() {
      const read = await status();
      if (!read) {
        this.remove();
        return;
      }
      // 0 for "never": an alert on its age then fires for a deployment whose reconciler never ran.
      const at = read.reconciler.lastRunAt;
      this.set(at === null ? 0 : Date.parse(at) / 1000);
    },
  });
}
