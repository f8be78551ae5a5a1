import {
  type AdmissionStore,
  type Config,
  type FlowLimits,
  flowLimitsKey,
  type HealthState,
  type HeldSummary,
  type HoldReason,
  type Logger,
  NO_FLOW_LIMITS,
} from "@punctual/core";
import type { AttemptOutcome } from "./transport.ts";

// The gate every attempt passes before the dispatcher (dispatcher.ts): its flow's limits and pause
// (contract §10.2) and its origin's health (§10.3), decided in Redis across every worker
// (admission-store.ts), so that a held delivery never takes a turn or a slot in the dispatcher and
// never delays another flow or organization.
//
// Attempts wait in lines, one per organization, flow and origin, oldest due first. A line asks Redis
// for as many starts as it has waiting (one script call for the whole line), starts what it is
// granted and, when held back, asks again when Redis says it can succeed: when the rate window
// frees, when a lease ends (or sooner, when this worker gives one back), at the next probe of an
// Unhealthy origin, or every PAUSED_POLL_MS while paused. An attempt without a flow to an origin
// this worker has just seen Healthy passes without asking (the burst path costs no Redis call).
//
// Memory stays bounded: beyond FLOW_HELD_MAX held attempts in this worker, the newest go back to
// the queue (handBack) and are looked at again FLOW_RECHECK_MS later. A delivery held past its
// maxAgeMs ends (expired). Outcomes feed the breaker in batches (REPORT_EVERY_MS), and what this
// worker holds back is published every HELD_PUBLISH_MS for the API's flow and destination records.

/** How long a flow's limits read from Postgres are used before they are read again (a pause takes effect within this). */
export const FLOW_LIMITS_FRESH_MS = 250;
/** How long an origin seen Healthy (by a report or a grant) lets attempts without a flow pass without asking Redis. */
export const HEALTH_FRESH_MS = 1_000;
/** How often a paused flow's line asks again (a resume takes effect within this plus FLOW_LIMITS_FRESH_MS). */
export const PAUSED_POLL_MS = 250;
/** The longest a line held by parallelism or an Unhealthy origin waits before asking again (another worker may free it). */
export const HELD_POLL_MS = 1_000;
/** How long after its attempt's time limit a lease expires by itself (a crashed worker's leases come back). */
export const LEASE_MARGIN_MS = 5_000;
/** Outcomes are reported to the breaker, and leases nobody here waits for given back, in batches this far apart. */
export const REPORT_EVERY_MS = 50;
/** How often a worker publishes what it holds back. */
export const HELD_PUBLISH_MS = 1_000;
/** How long a line waits before asking again after Redis or Postgres failed. */
const RETRY_AFTER_ERROR_MS = 500;

export interface GateTicket {
  orgId: string;
  origin: string;
  flowKey: string | null;
  /** When the attempt is due (ms since the epoch): the oldest go first, and it is what `oldestWaitingSince` reports. */
  dueAt: number;
  /** The attempt's time limit: its lease lasts this plus LEASE_MARGIN_MS. */
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
  healthChanged?(change: {
    orgId: string;
    origin: string;
    state: HealthState;
    consecutiveFailures: number;
    since: Date;
  }): Promise<unknown>;
}

interface Waiter {
  ticket: GateTicket;
  resolve: (admission: Admission) => void;
  /** Set once it was held back: it counts as waiting from then on. */
  held: boolean;
}

/** The attempts of one organization, flow and origin waiting for the gate, oldest due first. */
interface Line {
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

const FAILED = "f";
const ANSWERED = "s";
/** An attempt's outcome as the breaker counts it: a timeout, a refused connection or a 5xx fails. */
const breakerOutcome = (outcome: AttemptOutcome) =>
  outcome.kind !== "answered" || (outcome.responseStatus ?? 0) >= 500 ? FAILED : ANSWERED;

export function createFlowGate(deps: FlowGateDeps): FlowGate {
  const { store, config, logger, workerId } = deps;
  const breaker = { failures: config.BREAKER_FAILURES, minSpanMs: config.BREAKER_MIN_SPAN_MS };
  const lines = new Map<string, Line>();
  /** Origins' health as last seen, by organization and origin. */
  const health = new Map<string, { state: HealthState; at: number }>();
  /** Flows' limits as last read, by flowLimitsKey. */
  const limits = new Map<string, { limits: FlowLimits; at: number }>();
  /** Lines waiting for their flow's limits to be read, and the read under way. */
  let toRead: Line[] = [];
  let reading = false;
  /** Outcomes not reported yet, by organization and origin. */
  const reports = new Map<string, { orgId: string; origin: string; outcomes: string }>();
  let reportTimer: NodeJS.Timeout | undefined;
  /** Leases to give back, by organization and flow. */
  let releases: Map<string, { orgId: string; flowKey: string; leases: string[] }> | undefined;
  let releaseTimer: NodeJS.Timeout | undefined;
  let held = 0;
  let stopping = false;
  /** Organizations with a summary published, to empty it once they hold nothing back. */
  const published = new Set<string>();
  const publisher = setInterval(publishHeld, HELD_PUBLISH_MS);
  publisher.unref();

  const healthKey = (orgId: string, origin: string) => `${orgId}\n${origin}`;

  function healthyNow(orgId: string, origin: string): boolean {
    const seen = health.get(healthKey(orgId, origin));
    return seen !== undefined && seen.state === "Healthy" && Date.now() - seen.at < HEALTH_FRESH_MS;
  }

  function admitted(ticket: GateTicket, waited: boolean, lease: string | undefined): Admission {
    let finished = false;
    return {
      kind: "admitted",
      waited,
      done(outcome) {
        if (finished) return;
        finished = true;
        report(ticket.orgId, ticket.origin, breakerOutcome(outcome));
        if (lease !== undefined && ticket.flowKey !== null) release(ticket.orgId, ticket.flowKey, lease);
      },
    };
  }

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

  /** Adds a waiter in due order (most arrive in order: the search starts from the end). */
  function enqueue(line: Line, waiter: Waiter) {
    const { waiting } = line;
    let at = waiting.length;
    while (at > 0 && (waiting[at - 1] as Waiter).ticket.dueAt > waiter.ticket.dueAt) at -= 1;
    waiting.splice(at, 0, waiter);
  }

  function settle(waiter: Waiter, admission: Admission) {
    if (waiter.held) held -= 1;
    waiter.resolve(admission);
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

  /** Ends the waits of held attempts whose maxAgeMs has passed; the earliest deadline still ahead. */
  function expire(line: Line, now: number): number | undefined {
    let earliest: number | undefined;
    line.waiting = line.waiting.filter((waiter) => {
      const { deadline } = waiter.ticket;
      if (deadline === undefined) return true;
      if (deadline <= now) {
        settle(waiter, { kind: "expired", reason: line.reason ?? "paused" });
        return false;
      }
      earliest = earliest === undefined ? deadline : Math.min(earliest, deadline);
      return true;
    });
    return earliest;
  }

  function ask(line: Line) {
    if (line.asking || line.timer) return;
    // A delivery whose maxAgeMs has passed while it waited ends here, not in a start just after it.
    expire(line, Date.now());
    if (line.waiting.length === 0) {
      lines.delete(line.key);
      return;
    }
    if (line.flowKey !== null) {
      const known = limits.get(flowLimitsKey(line.orgId, line.flowKey));
      if (!known || Date.now() - known.at >= FLOW_LIMITS_FRESH_MS) return readLimitsFor(line);
    }
    line.asking = true;
    const flowLimits =
      line.flowKey === null
        ? undefined
        : (limits.get(flowLimitsKey(line.orgId, line.flowKey))?.limits ?? NO_FLOW_LIMITS);
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
            if (!answer.probe) health.set(healthKey(line.orgId, line.origin), { state: "Healthy", at: Date.now() });
            else logger.debug({ orgId: line.orgId, origin: line.origin }, "probing an Unhealthy destination");
            line.reason = undefined;
            const starting = line.waiting.splice(0, answer.granted);
            starting.forEach((waiter, n) => {
              settle(waiter, admitted(waiter.ticket, waiter.held, answer.leases[n]));
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
    if (reason === "unhealthy") health.set(healthKey(line.orgId, line.origin), { state: "Unhealthy", at: Date.now() });
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

  function markHeld(waiter: Waiter, reason: HoldReason) {
    if (waiter.held) return;
    waiter.held = true;
    held += 1;
    deps.metrics?.held(reason);
  }

  /** Beyond FLOW_HELD_MAX, the newest of the line go back to the queue: they wait in Redis, not in this heap. */
  function keepWithinBound(line: Line) {
    while (held > config.FLOW_HELD_MAX && line.waiting.length > 0) {
      settle(line.waiting.pop() as Waiter, { kind: "handBack", at: Date.now() + config.FLOW_RECHECK_MS });
    }
  }

  function readLimitsFor(line: Line) {
    if (!toRead.includes(line)) toRead.push(line);
    if (reading) return;
    reading = true;
    queueMicrotask(() => {
      const batch = toRead;
      toRead = [];
      const wanted = new Map<string, { orgId: string; flowKey: string }>();
      for (const { orgId, flowKey } of batch) {
        if (flowKey !== null) wanted.set(flowLimitsKey(orgId, flowKey), { orgId, flowKey });
      }
      deps.readLimits([...wanted.values()]).then(
        (found) => {
          reading = false;
          const now = Date.now();
          for (const [key] of wanted) limits.set(key, { limits: found.get(key) ?? NO_FLOW_LIMITS, at: now });
          for (const each of batch) ask(each);
          if (toRead.length > 0) readLimitsFor(toRead[0] as Line);
        },
        (error: unknown) => {
          reading = false;
          logger.warn({ err: error }, "could not read flows' limits; their deliveries wait");
          // Known limits, even old ones, still hold; a flow never read waits until they can be read.
          const now = Date.now();
          for (const [key, known] of limits) if (wanted.has(key)) limits.set(key, { ...known, at: now });
          for (const each of batch) {
            if (each.flowKey !== null && limits.has(flowLimitsKey(each.orgId, each.flowKey))) ask(each);
            else holdBack(each, "paused", RETRY_AFTER_ERROR_MS);
          }
        },
      );
    });
  }

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
    const waitedFor = [...lines.values()].some(
      (line) => line.reason === "parallelism" && line.orgId === orgId && line.flowKey === flowKey,
    );
    if (waitedFor) {
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
      () => {
        const freed = new Set(batch.map(({ orgId, flowKey }) => flowLimitsKey(orgId, flowKey)));
        for (const line of lines.values()) {
          if (line.reason !== "parallelism" || line.flowKey === null) continue;
          if (freed.has(flowLimitsKey(line.orgId, line.flowKey))) wake(line, 0);
        }
      },
      (error: unknown) => logger.warn({ err: error }, "could not give back flow leases; they expire by themselves"),
    );
  }

  function report(orgId: string, origin: string, outcome: string) {
    const key = healthKey(orgId, origin);
    const entry = reports.get(key);
    if (entry) entry.outcomes += outcome;
    else reports.set(key, { orgId, origin, outcomes: outcome });
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
          health.set(healthKey(orgId, origin), { state: answer.state, at: Date.now() });
          if (!answer.changed) return;
          deps.metrics?.healthChanged(answer.changed);
          const change = {
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
          if (answer.changed === "Healthy") {
            for (const line of lines.values()) {
              if (line.orgId === orgId && line.origin === origin && line.reason === "unhealthy") wake(line, 0);
            }
          }
        },
        (error: unknown) => logger.warn({ err: error, orgId, origin }, "could not report outcomes to the breaker"),
      );
    }
  }

  function publishHeld() {
    const byOrg = new Map<string, { flows: Map<string, HeldSummary>; origins: Map<string, HeldSummary> }>();
    const add = (into: Map<string, HeldSummary>, key: string, dueAt: number) => {
      const summary = into.get(key);
      if (!summary) into.set(key, { waiting: 1, oldestWaitingSince: dueAt });
      else {
        summary.waiting += 1;
        summary.oldestWaitingSince = Math.min(summary.oldestWaitingSince ?? dueAt, dueAt);
      }
    };
    for (const line of lines.values()) {
      for (const waiter of line.waiting) {
        if (!waiter.held) continue;
        let summary = byOrg.get(line.orgId);
        if (!summary) {
          summary = { flows: new Map(), origins: new Map() };
          byOrg.set(line.orgId, summary);
        }
        if (line.flowKey !== null) add(summary.flows, line.flowKey, waiter.ticket.dueAt);
        add(summary.origins, line.origin, waiter.ticket.dueAt);
      }
    }
    const empty = { flows: new Map<string, HeldSummary>(), origins: new Map<string, HeldSummary>() };
    for (const orgId of published) if (!byOrg.has(orgId)) byOrg.set(orgId, empty);
    for (const [orgId, summary] of byOrg) {
      if (summary === empty) published.delete(orgId);
      else published.add(orgId);
      store
        .publishHeld(orgId, workerId, summary)
        .catch((error: unknown) => logger.debug({ err: error, orgId }, "could not publish held deliveries"));
    }
  }

  return {
    admit(ticket) {
      if (ticket.flowKey === null && healthyNow(ticket.orgId, ticket.origin)) {
        return Promise.resolve(admitted(ticket, false, undefined));
      }
      return new Promise<Admission>((resolve) => {
        const line = lineOf(ticket);
        const waiter: Waiter = { ticket, resolve, held: false };
        enqueue(line, waiter);
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
      });
    },
    get held() {
      return held;
    },
    stop() {
      // What is held back goes back to the queue; what may still go (claimed attempts due during
      // the drain, which the stop sends as before) passes as usual, and is handed back if held.
      stopping = true;
      for (const line of [...lines.values()]) if (line.timer && line.reason) handBackAll(line);
    },
    async close() {
      clearInterval(publisher);
      flushReleases();
      if (reportTimer) {
        clearTimeout(reportTimer);
        flushReports();
      }
      publishHeld();
    },
  };
}
