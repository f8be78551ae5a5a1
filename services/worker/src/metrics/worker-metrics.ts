import type { HealthState, HoldReason } from "@punctual/core";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

export type DeliveryKind = "event" | "cron";
/** `sent`: a 2xx; `retry`: failed, another attempt follows; `failed`: the last attempt failed. */
export type DeliveryOutcome = "sent" | "retry" | "failed";
/**
 * What a job found Queued did about the worker delivering it (delivery/owners.ts): `stepped_aside`
 * while that worker lives, `taken_over` from a worker that was gone (or held it too long).
 */
export type OwnerDecision = "stepped_aside" | "taken_over";

/** What one delivery path (events or cron runs) records per attempt, with its labels bound once. */
export interface DeliveryMetrics {
  /**
   * Records one attempt: its outcome and duration and, for a delivery's first attempt, how late it
   * started (first attempt start − scheduled time, contract §8).
   */
  attempt(outcome: DeliveryOutcome, durationMs: number, latenessMs: number | undefined): void;
  /** How long after the answer the attempt's row (and a final status) was committed. */
  recorded(lagMs: number): void;
  /** A job found its delivery Queued by another worker, and stepped aside or took it over. */
  ownerDecision(decision: OwnerDecision): void;
}

/** A worker process's metrics, served on its health port at `/metrics`. */
export interface WorkerMetrics {
  registry: Registry;
  event: DeliveryMetrics;
  cron: DeliveryMetrics;
  /** Pending events the reconciler (run by this worker) marked Failed To Queue. */
  failedToQueue(count: number): void;
  /** What the flow gate counts (flow-gate.ts). */
  gate: { held(reason: HoldReason): void; healthChanged(state: HealthState): void };
}

/** From 1 ms to 60 s: a delivery is meant to leave within milliseconds of its time. */
export const LATENESS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** From 1 ms: outcomes are written in batches a few milliseconds behind the answers. */
export const RECORD_LAG_BUCKETS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.2, 0.5, 1, 5];
/** Up to the default attempt timeout (10 s) and beyond for a configured longer one. */
export const ATTEMPT_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The outcome label of an attempt, from the send result and the final status its recording set. */
export function deliveryOutcome(ok: boolean, final: string | null): DeliveryOutcome {
  if (ok) return "sent";
  return final === null ? "retry" : "failed";
}

/** Counts read at each scrape from the parts of the worker that keep them. */
export interface WorkerGauges {
  /** Event jobs held in memory: prepared, claimed, in flight or between retries. */
  preparedJobs(): number;
  /** Attempts waiting for a slot in the dispatcher. */
  attemptsWaiting(): number;
  /** Attempts sent and not answered yet. */
  attemptsInFlight(): number;
  /** Destination origins capped for timing out or refusing connections. */
  cappedOrigins(): number;
  /** Deliveries held back by their flow or their origin's health in this worker. */
  heldDeliveries(): number;
}

/**
 * Builds a worker's registry (its own, not prom-client's global one): deliveries, lateness, the
 * prepared jobs and the dispatcher's state (read at each scrape), Node metrics.
 */
export function createWorkerMetrics(gauges: WorkerGauges): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const deliveries = new Counter({
    name: "punctual_deliveries_total",
    help: "Delivery attempts by kind (event or cron run) and outcome (sent, retry, failed)",
    labelNames: ["kind", "outcome"] as const,
    registers: [registry],
  });
  const lateness = new Histogram({
    name: "punctual_delivery_lateness_seconds",
    help: "First attempt start minus scheduled time, by kind",
    labelNames: ["kind"] as const,
    buckets: LATENESS_BUCKETS,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "punctual_delivery_attempt_duration_seconds",
    help: "Duration of one delivery attempt (request to end of response, or error), by kind",
    labelNames: ["kind"] as const,
    buckets: ATTEMPT_DURATION_BUCKETS,
    registers: [registry],
  });

  const recordLag = new Histogram({
    name: "punctual_attempt_record_lag_seconds",
    help: "From a receiver's answer (or the attempt's failure) to its attempt row committed, by kind",
    labelNames: ["kind"] as const,
    buckets: RECORD_LAG_BUCKETS,
    registers: [registry],
  });
  const ownerDecisions = new Counter({
    name: "punctual_delivery_owner_decisions_total",
    help: "Jobs that found their delivery Queued by another worker, by kind and decision: stepped_aside (that worker lives) or taken_over (it was gone)",
    labelNames: ["kind", "decision"] as const,
    registers: [registry],
  });

  // Children are bound once, so recording an attempt only increments and observes. Every series
  // is shown (at 0) from the first scrape, so rates and ratios work before the first failure.
  const forKind = (kind: DeliveryKind): DeliveryMetrics => {
    for (const outcome of ["sent", "retry", "failed"] as const) deliveries.inc({ kind, outcome }, 0);
    for (const decision of ["stepped_aside", "taken_over"] as const) ownerDecisions.inc({ kind, decision }, 0);
    lateness.zero({ kind });
    duration.zero({ kind });
    recordLag.zero({ kind });
    const lag = recordLag.labels(kind);
    const outcomes = {
      sent: deliveries.labels(kind, "sent"),
      retry: deliveries.labels(kind, "retry"),
      failed: deliveries.labels(kind, "failed"),
    };
    const late = lateness.labels(kind);
    const took = duration.labels(kind);
    return {
      attempt(outcome, durationMs, latenessMs) {
        outcomes[outcome].inc();
        took.observe(durationMs / 1000);
        if (latenessMs !== undefined) late.observe(latenessMs / 1000);
      },
      recorded(lagMs) {
        lag.observe(lagMs / 1000);
      },
      ownerDecision(decision) {
        ownerDecisions.inc({ kind, decision });
      },
    };
  };
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(read());
      },
    });
  gauge(
    "punctual_prepared_jobs",
    "Event jobs held in memory: prepared ahead of their time, claimed, in flight or between retries (at most WORKER_PREPARED_JOBS)",
    gauges.preparedJobs,
  );
  gauge("punctual_attempts_waiting", "Delivery attempts due and waiting for a send slot", gauges.attemptsWaiting);
  gauge("punctual_attempts_in_flight", "Delivery attempts sent and not answered yet", gauges.attemptsInFlight);
  gauge(
    "punctual_capped_origins",
    "Destination origins capped at ORIGIN_UNHEALTHY_CONCURRENCY after a timeout or a refused connection",
    gauges.cappedOrigins,
  );
  // Counted where it happens, in the reconciler run by whichever worker holds its lock: summed over
  // the workers, its increase is the events that ended without an attempt.
  const eventsFailedToQueue = new Counter({
    name: "punctual_events_failed_to_queue_total",
    help: "Pending events marked Failed To Queue by the reconciler run in this worker (not queued within QUEUE_GRACE_MS of their time)",
    registers: [registry],
  });
  // Bounded labels: a reason or a state, never a flow key or an origin (GET /api/flows and
  // GET /api/destinations name them).
  gauge(
    "punctual_deliveries_held",
    "Deliveries held back in this worker by their flow (paused, rate, parallelism) or their destination's health",
    gauges.heldDeliveries,
  );
  const held = new Counter({
    name: "punctual_deliveries_held_total",
    help: "Deliveries held back at least once before their attempt, by reason: paused, rate, parallelism, unhealthy",
    labelNames: ["reason"] as const,
    registers: [registry],
  });
  const healthChanges = new Counter({
    name: "punctual_destination_state_changes_total",
    help: "Destination origins that became Unhealthy or Healthy again, counted by the worker whose outcome changed them",
    labelNames: ["state"] as const,
    registers: [registry],
  });
  for (const reason of ["paused", "rate", "parallelism", "unhealthy"] as const) held.inc({ reason }, 0);
  for (const state of ["Healthy", "Unhealthy"] as const) healthChanges.inc({ state }, 0);
  return {
    registry,
    gate: {
      held: (reason) => held.inc({ reason }),
      healthChanged: (state) => healthChanges.inc({ state }),
    },
    event: forKind("event"),
    cron: forKind("cron"),
    failedToQueue(count) {
      eventsFailedToQueue.inc(count);
    },
  };
}
