import { withTimeout } from "@punctual/core";
import { Gauge, type Registry } from "prom-client";
import { SERVICE_READ_TIMEOUT_MS } from "./service-gauges.ts";

/** What the API reads at each scrape about flows and destinations (contract §10.2, §10.3). */
export interface FlowReads {
  /** Origins Unhealthy now, over every organization (admission-store.ts `unhealthyCount`, one SCARD). */
  unhealthyDestinations: () => Promise<number>;
  /** Paused flows over every organization (flow-records.ts `countPausedFlows`, one count in Postgres). */
  pausedFlows: () => Promise<number>;
}

/** The count, or undefined when it fails or takes longer than a scrape may wait. */
const within = (read: () => Promise<number>) =>
  withTimeout(Promise.resolve().then(read), SERVICE_READ_TIMEOUT_MS, undefined).catch(() => undefined);

/**
 * Totals over the deployment, never a series per organization, flow key or origin: those are
 * unbounded, and the API answers them per organization (GET /api/flows, GET /api/destinations).
 * Read by any API instance from what every worker shares, as the service gauges are.
 */
export function registerFlowGauges(registry: Registry, reads: FlowReads): void {
  new Gauge({
    name: "punctual_destination_state",
    help: "Destination origins (per organization) in a health state, over every organization; only state=Unhealthy is counted (the Healthy ones are every other origin). Absent while Redis does not answer",
    labelNames: ["state"] as const,
    registers: [registry],
    async collect() {
      const unhealthy = await within(reads.unhealthyDestinations);
      if (unhealthy === undefined) this.remove({ state: "Unhealthy" });
      else this.set({ state: "Unhealthy" }, unhealthy);
    },
  });
  new Gauge({
    name: "punctual_flows_paused",
    help: "Flows paused now, over every organization; absent while Postgres does not answer",
    registers: [registry],
    async collect() {
      const paused = await within(reads.pausedFlows);
      if (paused === undefined) this.remove();
      else this.set(paused);
    },
  });
}
