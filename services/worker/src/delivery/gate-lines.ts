import {
  type AdmissionStore,
  type Config,
  type FlowLimits,
  flowLimitsKey,
  type HoldReason,
  type Logger,
} from "@punctual/core";
import type { Admission, GateTicket } from "./flow-gate.ts";
import { createFlowLimitsCache } from "./flow-limits-cache.ts";
import { createWaiters, enqueue, type Waiter } from "./gate-waiters.ts";
import type { HealthSeen } from "./health-seen.ts";

// The gate's lines (flow-gate.ts): attempts wait in one line per organization, flow and origin,
// oldest due first. A line asks Redis for as many starts as it has waiting (one script call for the
// whole line, admission-store.ts), starts what it is granted and, when held back, asks again when
// Redis says it can succeed: when the rate window frees, when a lease ends (or sooner, when this
// worker gives one back: gate-reports.ts), at the next probe of an Unhealthy origin, or every
// PAUSED_POLL_MS while paused. Before it asks, its flow's limits are read if they are not fresh
// (flow-limits-cache.ts). What waits in a line, and how much of it this worker holds back, is
// gate-waiters.ts; a stopping worker hands back what it holds.

/** How often a paused flow's line asks again (a resume takes effect within this plus FLOW_LIMITS_FRESH_MS). */
export const PAUSED_POLL_MS = 250;
/** The longest a line held by parallelism or an Unhealthy origin waits before asking again (another worker may free it). */
export const HELD_POLL_MS = 1_000;
/** How long after its attempt's time limit a lease expires by itself (a crashed worker's leases come back). */
export const LEASE_MARGIN_MS = 5_000;
/** How long a line waits before asking again after Redis or Postgres failed. */
const RETRY_AFTER_ERROR_MS = 500;

/** The attempts of one organization, flow and origin waiting for the gate, oldest due first. */
export interface Line {
  key: string;
  orgId: string;
  flowKey: string | null;
  origin: string;
  waiting: Waiter[];
  asking: boolean;
  timer: NodeJS.Timeout | undefined;
  /** When `timer` fires (ms since the epoch). */
  wakeAt: number;
  /** Why it was last held back; undefined while nothing holds it. */
  reason: HoldReason | undefined;
}

export interface GateLinesDeps {
  store: AdmissionStore;
  /** Reads flows' limits (readFlowLimits against Postgres). */
  readLimits(flows: { orgId: string; flowKey: string }[]): Promise<Map<string, FlowLimits>>;
  config: Pick<Config, "BREAKER_PROBE_MS" | "FLOW_HELD_MAX" | "FLOW_RECHECK_MS">;
  health: HealthSeen;
  logger: Logger;
  /** A delivery was held back (counted by reason). */
  metrics?: { held(reason: HoldReason): void };
  /** What a granted attempt is answered: `waited` when it was held back, `lease` its flow's lease. */
  admitted(ticket: GateTicket, waited: boolean, lease: string | undefined): Admission;
}

export interface GateLines {
  /** Puts the attempt in its line; `resolve` is called once with what happens to it. */
  wait(ticket: GateTicket, resolve: (admission: Admission) => void): void;
  /** Attempts held back now. */
  readonly held: number;
  /** The lines with attempts waiting. */
  values(): Iterable<Line>;
  /** Whether a line of the flow is held by parallelism: an attempt here waits for one of its leases. */
  waitsForLease(orgId: string, flowKey: string): boolean;
  /** Leases of these flows (by flowLimitsKey) were given back: their lines held by parallelism ask again. */
  leasesFreed(flows: Set<string>): void;
  /** The origin is Healthy again: its lines held by it ask again. */
  healthyAgain(orgId: string, origin: string): void;
  /** Hands back everything held now, and whatever is held back from now on. */
  stop(): void;
}

export function createGateLines(deps: GateLinesDeps): GateLines {
  const { store, config, health, logger } = deps;
  const lines = new Map<string, Line>();
  const limits = createFlowLimitsCache<Line>({
    readLimits: deps.readLimits,
    logger,
    known: (line) => ask(line),
    unknown: (line) => holdBack(line, "paused", RETRY_AFTER_ERROR_MS),
  });
  const waiters = createWaiters({ config, metrics: deps.metrics });
  const { settle, markHeld, keepWithinBound, expire } = waiters;
  let stopping = false;

  function lineOf(ticket: GateTicket): Line {
    const key = `${ticket.orgId}\n${ticket.flowKey ?? ""}\n${ticket.origin}`;
    let line = lines.get(key);
    if (!line) {
      line = {
        key,
        orgId: ticket.orgId,
        flowKey: ticket.flowKey,
        origin: ticket.origin,
        waiting: [],
        asking: false,
        timer: undefined,
        wakeAt: 0,
        reason: undefined,
      };
      lines.set(key, line);
    }
    return line;
  }

  function wake(line: Line, inMs: number) {
    if (line.timer) clearTimeout(line.timer);
    line.timer = undefined;
    if (inMs <= 0) {
      queueMicrotask(() => ask(line));
      return;
    }
    line.wakeAt = Date.now() + inMs;
    line.timer = setTimeout(() => {
      line.timer = undefined;
      ask(line);
    }, inMs);
    line.timer.unref();
  }

  function ask(line: Line) {
    if (line.asking || line.timer) return;
    // A delivery whose maxAgeMs has passed while it waited ends here, not in a start just after it.
    expire(line, Date.now());
    if (line.waiting.length === 0) {
      lines.delete(line.key);
      return;
    }
    let flowLimits: FlowLimits | undefined;
    if (line.flowKey !== null) {
      flowLimits = limits.fresh(line.orgId, line.flowKey);
      if (!flowLimits) return limits.read(line);
    }
    line.asking = true;
    const longestTimeout = Math.max(...line.waiting.map((waiter) => waiter.ticket.timeoutMs));
    store
      .admit({
        orgId: line.orgId,
        origin: line.origin,
        wanted: line.waiting.length,
        probeMs: config.BREAKER_PROBE_MS,
        flow:
          line.flowKey === null || !flowLimits
            ? undefined
            : { key: line.flowKey, limits: flowLimits, leaseMs: longestTimeout + LEASE_MARGIN_MS },
      })
      .then(
        (answer) => {
          line.asking = false;
          if (answer.granted > 0 && "leases" in answer) {
            if (!answer.probe) health.saw(line.orgId, line.origin, "Healthy");
            else logger.debug({ orgId: line.orgId, origin: line.origin }, "probing an Unhealthy destination");
            line.reason = undefined;
            const starting = line.waiting.splice(0, answer.granted);
            starting.forEach((waiter, n) => {
              settle(waiter, deps.admitted(waiter.ticket, waiter.held, answer.leases[n]));
            });
            // Granted fewer than asked: ask again at once for the rest (the answer then says why).
            return wake(line, 0);
          }
          if (!("reason" in answer)) return wake(line, 0);
          if (stopping) return handBackAll(line);
          holdBack(line, answer.reason, answer.waitMs);
        },
        (error: unknown) => {
          line.asking = false;
          logger.warn(
            { err: error, orgId: line.orgId, flowKey: line.flowKey },
            "could not ask Redis to admit attempts",
          );
          if (stopping) handBackAll(line);
          else holdBack(line, line.reason ?? "paused", RETRY_AFTER_ERROR_MS);
        },
      );
  }

  function holdBack(line: Line, reason: HoldReason, waitMs: number) {
    line.reason = reason;
    if (reason === "unhealthy") health.saw(line.orgId, line.origin, "Unhealthy");
    for (const waiter of line.waiting) markHeld(waiter, reason);
    keepWithinBound(line);
    const now = Date.now();
    const deadline = expire(line, now);
    let inMs: number;
    if (reason === "rate") inMs = Math.max(1, waitMs);
    else if (reason === "paused") inMs = PAUSED_POLL_MS;
    else inMs = Math.min(Math.max(1, waitMs), HELD_POLL_MS);
    if (deadline !== undefined) inMs = Math.min(inMs, deadline - now);
    wake(line, Math.max(1, inMs));
  }

  /** A stopping worker holds nothing back: the line's attempts go back to the queue, due now. */
  function handBackAll(line: Line) {
    if (line.timer) clearTimeout(line.timer);
    line.timer = undefined;
    const now = Date.now();
    for (const waiter of line.waiting) settle(waiter, { kind: "handBack", at: now });
    line.waiting = [];
    lines.delete(line.key);
  }

  return {
    wait(ticket, resolve) {
      const line = lineOf(ticket);
      const waiter: Waiter = { ticket, resolve, held: false };
      enqueue(line.waiting, waiter);
      if (line.timer && line.reason) {
        // The line is held back: so is this attempt, until the line asks again at its time (or at
        // this attempt's deadline, if that comes first).
        markHeld(waiter, line.reason);
        keepWithinBound(line);
        if (ticket.deadline !== undefined && ticket.deadline < line.wakeAt) {
          wake(line, Math.max(1, ticket.deadline - Date.now()));
        }
        return;
      }
      // A new line asks at once, with the others of this turn of the event loop: one call for the
      // burst's attempts of one line. A line asking now asks again for the rest when answered.
      if (!line.asking && !line.timer && line.waiting.length === 1) wake(line, 0);
    },
    get held() {
      return waiters.held;
    },
    values: () => lines.values(),
    waitsForLease(orgId, flowKey) {
      return [...lines.values()].some(
        (line) => line.reason === "parallelism" && line.orgId === orgId && line.flowKey === flowKey,
      );
    },
    leasesFreed(flows) {
      for (const line of lines.values()) {
        if (line.reason !== "parallelism" || line.flowKey === null) continue;
        if (flows.has(flowLimitsKey(line.orgId, line.flowKey))) wake(line, 0);
      }
    },
    healthyAgain(orgId, origin) {
      for (const line of lines.values()) {
        if (line.orgId === orgId && line.origin === origin && line.reason === "unhealthy") wake(line, 0);
      }
    },
    stop() {
      // What is held back goes back to the queue; what may still go (claimed attempts due during
      // the drain, which the stop sends as before) passes as usual, and is handed back if held.
      stopping = true;
      for (const line of [...lines.values()]) if (line.timer && line.reason) handBackAll(line);
    },
  };
}
