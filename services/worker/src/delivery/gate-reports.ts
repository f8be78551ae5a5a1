import {
  type AdmissionStore,
  type BreakerSettings,
  flowLimitsKey,
  type HealthState,
  type Logger,
} from "@punctual/core";
import { type HealthSeen, originKey } from "./health-seen.ts";
import type { AttemptOutcome } from "./transport.ts";

// What an attempt let through by the gate (flow-gate.ts) gives back once it is done: its outcome to
// its origin's breaker (contract §10.3) and its flow's parallelism lease (§10.2), both in batches
// every REPORT_EVERY_MS, one round trip for a burst's answers rather than one per answer. A lease an
// attempt of this worker waits for goes back at once. The breaker's answers are what this worker
// sees of its origins' health (health-seen.ts); a change of state is logged, counted and told to
// the organization's `destination.*` webhooks by the one worker whose report made it.

/** Outcomes are reported to the breaker, and leases nobody here waits for given back, in batches this far apart. */
export const REPORT_EVERY_MS = 50;

const FAILED = "f";
const ANSWERED = "s";
/** An attempt's outcome as the breaker counts it: a timeout, a refused connection or a 5xx fails. */
export const breakerOutcome = (outcome: AttemptOutcome) =>
  outcome.kind !== "answered" || (outcome.responseStatus ?? 0) >= 500 ? FAILED : ANSWERED;

/** An origin's change of state, as the breaker's script decided it. */
export interface HealthChange {
  orgId: string;
  origin: string;
  state: HealthState;
  consecutiveFailures: number;
  since: Date;
}

export interface GateReportsDeps {
  store: AdmissionStore;
  breaker: BreakerSettings;
  health: HealthSeen;
  logger: Logger;
  /** An origin changed state (counted). */
  metrics?: { healthChanged(state: HealthState): void };
  /** An origin's state was changed by this worker's report: the organization's webhooks are told. */
  healthChanged?(change: HealthChange): Promise<unknown>;
  /** Whether an attempt of this worker waits for a lease of the flow (its line held by parallelism). */
  waitsForLease(orgId: string, flowKey: string): boolean;
  /** Leases of these flows (by flowLimitsKey) were given back: this worker's attempts waiting for them ask again. */
  leasesFreed(flows: Set<string>): void;
  /** The origin is Healthy again: this worker's attempts held by it ask again. */
  healthyAgain(orgId: string, origin: string): void;
}

export interface GateReports {
  /** An attempt's outcome, for its origin's breaker. */
  report(orgId: string, origin: string, outcome: AttemptOutcome): void;
  /** Gives back the lease of an attempt of the flow that is done. */
  release(orgId: string, flowKey: string, lease: string): void;
  /** Sends what waits for its batch now (the worker closes). */
  flush(): void;
}

export function createGateReports(deps: GateReportsDeps): GateReports {
  const { store, breaker, health, logger } = deps;
  /** Outcomes not reported yet, by organization and origin. */
  const reports = new Map<string, { orgId: string; origin: string; outcomes: string }>();
  let reportTimer: NodeJS.Timeout | undefined;
  /** Leases to give back, by organization and flow. */
  let releases: Map<string, { orgId: string; flowKey: string; leases: string[] }> | undefined;
  let releaseTimer: NodeJS.Timeout | undefined;

  function release(orgId: string, flowKey: string, lease: string) {
    releases ??= new Map();
    const key = flowLimitsKey(orgId, flowKey);
    let entry = releases.get(key);
    if (!entry) {
      entry = { orgId, flowKey, leases: [] };
      releases.set(key, entry);
    }
    entry.leases.push(lease);
    // Given back at once when an attempt of this worker waits for it; else with the others of the
    // next REPORT_EVERY_MS, in one round trip (a burst's answers would otherwise be as many calls).
    if (deps.waitsForLease(orgId, flowKey)) {
      if (releaseTimer) clearTimeout(releaseTimer);
      releaseTimer = undefined;
      queueMicrotask(flushReleases);
    } else if (!releaseTimer) {
      releaseTimer = setTimeout(flushReleases, REPORT_EVERY_MS);
      releaseTimer.unref();
    }
  }

  function flushReleases() {
    if (releaseTimer) clearTimeout(releaseTimer);
    releaseTimer = undefined;
    const batch = releases ? [...releases.values()] : [];
    releases = undefined;
    if (batch.length === 0) return;
    store.release(batch).then(
      // Leases given back: this worker's lines of those flows held by parallelism may start now.
      () => deps.leasesFreed(new Set(batch.map(({ orgId, flowKey }) => flowLimitsKey(orgId, flowKey)))),
      (error: unknown) => logger.warn({ err: error }, "could not give back flow leases; they expire by themselves"),
    );
  }

  function report(orgId: string, origin: string, outcome: AttemptOutcome) {
    const key = originKey(orgId, origin);
    const entry = reports.get(key);
    if (entry) entry.outcomes += breakerOutcome(outcome);
    else reports.set(key, { orgId, origin, outcomes: breakerOutcome(outcome) });
    if (!reportTimer) {
      reportTimer = setTimeout(flushReports, REPORT_EVERY_MS);
      reportTimer.unref();
    }
  }

  function flushReports() {
    reportTimer = undefined;
    const batch = [...reports.values()];
    reports.clear();
    for (const { orgId, origin, outcomes } of batch) {
      store.report(orgId, origin, outcomes, breaker).then(
        (answer) => {
          health.saw(orgId, origin, answer.state);
          if (!answer.changed) return;
          deps.metrics?.healthChanged(answer.changed);
          const change: HealthChange = {
            orgId,
            origin,
            state: answer.changed,
            consecutiveFailures: answer.consecutiveFailures,
            since: new Date(),
          };
          deps
            .healthChanged?.(change)
            .catch((error: unknown) =>
              logger.warn({ err: error, orgId, origin }, "could not write a destination health notice"),
            );
          logger.info(
            { orgId, origin, state: answer.changed, consecutiveFailures: answer.consecutiveFailures },
            answer.changed === "Unhealthy"
              ? "destination is Unhealthy: its deliveries wait, one probe at a time"
              : "destination is Healthy again: its waiting deliveries go, oldest first",
          );
          if (answer.changed === "Healthy") deps.healthyAgain(orgId, origin);
        },
        (error: unknown) => logger.warn({ err: error, orgId, origin }, "could not report outcomes to the breaker"),
      );
    }
  }

  return {
    report,
    release,
    flush() {
      flushReleases();
      if (reportTimer) {
        clearTimeout(reportTimer);
        flushReports();
      }
    },
  };
}
