import type { AdmissionStore, Config, FlowLimits, HealthState, HoldReason, Logger } from "@punctual/core";
import { createGateLines } from "./gate-lines.ts";
import { createGateReports, type HealthChange } from "./gate-reports.ts";
import { createHealthSeen } from "./health-seen.ts";
import { startHeldPublisher } from "./held-publisher.ts";
import type { AttemptOutcome } from "./transport.ts";

// The gate every attempt passes before the dispatcher (dispatcher.ts): its flow's limits and pause
// (contract §10.2) and its origin's health (§10.3), decided in Redis across every worker
// (admission-store.ts), so that a held delivery never takes a turn or a slot in the dispatcher and
// never delays another flow or organization.
//
// Its parts, one module each:
// - gate-lines.ts: attempts wait in lines, one per organization, flow and origin, oldest due first;
//   a line asks Redis for all it has waiting in one call and, held back, asks again when Redis says
//   it can succeed. What waits and how much is held back (FLOW_HELD_MAX, maxAgeMs): gate-waiters.ts.
// - flow-limits-cache.ts: flows' limits and pause read from Postgres, fresh for FLOW_LIMITS_FRESH_MS.
// - health-seen.ts: origins' health as last seen. An attempt without a flow to an origin this worker
//   has just seen Healthy passes here without asking (the burst path costs no Redis call).
// - gate-reports.ts: outcomes to the breaker and leases given back, in batches (REPORT_EVERY_MS).
// - held-publisher.ts: what this worker holds back, published every HELD_PUBLISH_MS for the API's
//   flow and destination records.

export interface GateTicket {
  orgId: string;
  origin: string;
  flowKey: string | null;
  /** When the attempt is due (ms since the epoch): the oldest go first, and it is what `oldestWaitingSince` reports. */
  dueAt: number;
  /** The attempt's time limit: its lease lasts this plus LEASE_MARGIN_MS (gate-lines.ts). */
  timeoutMs: number;
  /** scheduledTime + maxAgeMs (ms since the epoch): held past it, the delivery ends; undefined: never. */
  deadline: number | undefined;
}

export type Admission =
  /** Send now; `waited` when it was held back (sign again: its time is now). Call `done` with the outcome. */
  | { kind: "admitted"; waited: boolean; done(outcome: AttemptOutcome): void }
  /** Not sent: back to the queue for `at` (ms since the epoch), with the claim let go. */
  | { kind: "handBack"; at: number }
  /** Held past its maxAgeMs: the delivery ends without this attempt. */
  | { kind: "expired"; reason: HoldReason };

const HOLD_REASONS: Record<HoldReason, string> = {
  paused: "its flow was paused",
  rate: "its flow's rate limit held it back",
  parallelism: "its flow's parallelism limit held it back",
  unhealthy: "its destination was Unhealthy",
};

/**
 * What is recorded for a delivery held back past its maxAgeMs: no request left, and the error says
 * why, so that its history explains its `Failed To Send`.
 */
export function notSentOutcome(reason: HoldReason, now: Date): AttemptOutcome {
  return {
    ok: false,
    startedAt: now,
    responseStatus: null,
    responseBody: null,
    durationMs: 0,
    error: `Not sent: ${HOLD_REASONS[reason]} until its maxAgeMs had passed`,
    retryAfter: null,
    kind: "refused",
  };
}

export interface FlowGate {
  /** Resolves when the attempt may start, or what happens to it instead. Never rejects. */
  admit(ticket: GateTicket): Promise<Admission>;
  /** Attempts held back now. */
  readonly held: number;
  /**
   * The worker stops: everything held back goes back to the queue at once, and so does any attempt
   * held back from now on; attempts that may go still go (the drain sends what was claimed).
   */
  stop(): void;
  /** Stops the timers and removes this worker's published summaries. */
  close(): Promise<void>;
}

export interface FlowGateDeps {
  store: AdmissionStore;
  /** Reads flows' limits (readFlowLimits against Postgres). */
  readLimits(flows: { orgId: string; flowKey: string }[]): Promise<Map<string, FlowLimits>>;
  config: Pick<
    Config,
    "BREAKER_FAILURES" | "BREAKER_MIN_SPAN_MS" | "BREAKER_PROBE_MS" | "FLOW_HELD_MAX" | "FLOW_RECHECK_MS"
  >;
  workerId: string;
  logger: Logger;
  /** A delivery was held back (counted by reason); an origin changed state (counted). */
  metrics?: { held(reason: HoldReason): void; healthChanged(state: HealthState): void };
  /**
   * An origin's state was changed by this worker's report (once per change across the workers: the
   * report's script decides it): the organization's `destination.*` webhooks are told.
   */
  healthChanged?(change: HealthChange): Promise<unknown>;
}

export function createFlowGate(deps: FlowGateDeps): FlowGate {
  const { store, config, logger, workerId } = deps;
  const health = createHealthSeen();
  const reports = createGateReports({
    store,
    breaker: { failures: config.BREAKER_FAILURES, minSpanMs: config.BREAKER_MIN_SPAN_MS },
    health,
    logger,
    metrics: deps.metrics,
    healthChanged: deps.healthChanged,
    waitsForLease: (orgId, flowKey) => lines.waitsForLease(orgId, flowKey),
    leasesFreed: (flows) => lines.leasesFreed(flows),
    healthyAgain: (orgId, origin) => lines.healthyAgain(orgId, origin),
  });
  const lines = createGateLines({
    store,
    readLimits: deps.readLimits,
    config,
    health,
    logger,
    metrics: deps.metrics,
    admitted,
  });
  const publisher = startHeldPublisher({ store, workerId, logger, lines: () => lines.values() });

  /** Once done, the attempt's outcome goes to its origin's breaker and its lease back to its flow. */
  function admitted(ticket: GateTicket, waited: boolean, lease: string | undefined): Admission {
    let finished = false;
    return {
      kind: "admitted",
      waited,
      done(outcome) {
        if (finished) return;
        finished = true;
        reports.report(ticket.orgId, ticket.origin, outcome);
        if (lease !== undefined && ticket.flowKey !== null) reports.release(ticket.orgId, ticket.flowKey, lease);
      },
    };
  }

  return {
    admit(ticket) {
      if (ticket.flowKey === null && health.healthyNow(ticket.orgId, ticket.origin)) {
        return Promise.resolve(admitted(ticket, false, undefined));
      }
      return new Promise<Admission>((resolve) => lines.wait(ticket, resolve));
    },
    get held() {
      return lines.held;
    },
    stop() {
      lines.stop();
    },
    async close() {
      reports.flush();
      publisher.close();
    },
  };
}
