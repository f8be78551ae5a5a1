import type { Logger } from "@punctual/core";
import { Fifo } from "./fifo.ts";
import { OrgQueue, type WaitingAttempt } from "./org-queue.ts";
import { createOriginCaps, type OriginState } from "./origin-caps.ts";
import type { AttemptOutcome, DeliveryHttpRequest, Transport } from "./transport.ts";

// Every delivery attempt of a worker — first attempts, retries, cron runs — waits here for a slot,
// and only here (contract §9, Isolation):
//
// - Turns are per organization: organizations with attempts waiting are served round robin, one
//   attempt each per turn, and none may hold more than its share of the counted slots
//   (WORKER_CONCURRENCY divided by the organizations waiting, leaving out those whose every waiting
//   attempt is held back by an origin cap), so a tenant with thousands of waiting attempts cannot
//   starve one with a few, and one whose receivers are dead does not keep slots it cannot use.
// - Caps are per origin (scheme + host + port), across organizations, lower for an origin that
//   times out, refuses or has gone silent (origin-caps.ts).
// - An attempt still unanswered after SLOW_ATTEMPT_MS stops counting against WORKER_CONCURRENCY (it
//   still counts against its origin's cap and the total bound): the slots a hanging origin holds are
//   not taken from other tenants' turns. A slow but healthy receiver keeps its full origin cap.

/** When an unanswered attempt stops counting against the worker's concurrency. */
export const SLOW_ATTEMPT_MS = 100;
/**
 * Most attempts one organization may have in flight, slow ones included, as a multiple of the
 * concurrency divided by the organizations waiting (a bound on sockets and memory).
 */
const TOTAL_IN_FLIGHT_FACTOR = 20;
/** How often unanswered attempts are checked for slowness (the precision of SLOW_ATTEMPT_MS). */
const SWEEP_INTERVAL_MS = 50;

export interface DispatcherOptions {
  transport: Transport;
  /** WORKER_CONCURRENCY: attempts counted in flight at once. */
  maxInFlight: number;
  /** ORIGIN_CONCURRENCY. */
  originConcurrency: number;
  /** ORIGIN_UNHEALTHY_CONCURRENCY. */
  unhealthyOriginConcurrency: number;
  logger: Logger;
  /** Overrides SLOW_ATTEMPT_MS (tests). */
  slowAttemptMs?: number;
}

export interface Dispatcher {
  /**
   * Queues one attempt of organization `org` to `origin` (the request URL's origin, worked out before
   * the instant); resolves with its outcome once it has been sent and answered. Never rejects.
   */
  submit(org: string, origin: string, request: DeliveryHttpRequest): Promise<AttemptOutcome>;
  /**
   * `attempts` attempts to `origin` are due soon (claimed for their instant): opens ahead as many
   * connections as could then be in flight to it at once (its cap, WORKER_CONCURRENCY), at most one
   * per attempt, so the instant's requests go out on connections already open. None for an origin
   * capped for timing out or refusing. Resolves once they are open (or have failed).
   */
  prepare(origin: string, attempts: number): Promise<void>;
  /** Attempts waiting for a slot. */
  readonly waiting: number;
  /** Attempts sent and not yet answered. */
  readonly inFlight: number;
  /** Origins currently capped for timing out or refusing connections. */
  readonly cappedOrigins: number;
  /**
   * Resolves once no attempt waits and none counted is in flight (hanging ones past SLOW_ATTEMPT_MS
   * do not count): the moment after a burst. Unbounded: bookkeeping.ts bounds the waits for it.
   */
  whenIdle(): Promise<void>;
  /** Stops the slowness sweep; attempts in flight still settle. */
  close(): void;
}

interface InFlight {
  org: OrgQueue;
  startedAt: number;
  counted: boolean;
}

export function createDispatcher(options: DispatcherOptions): Dispatcher {
  const { transport, maxInFlight, originConcurrency, unhealthyOriginConcurrency, logger } = options;
  const slowAttemptMs = options.slowAttemptMs ?? SLOW_ATTEMPT_MS;
  const maxTotal = maxInFlight * TOTAL_IN_FLIGHT_FACTOR;

  const orgs = new Map<string, OrgQueue>();
  /** Organizations with attempts waiting, in turn order. */
  const ring: OrgQueue[] = [];
  let turn = 0;
  const origins = createOriginCaps({ originConcurrency, unhealthyOriginConcurrency, slowAttemptMs, logger });
  /** Counted attempts in the order they were sent, for the slowness sweep. */
  const counting = new Fifo<InFlight>();
  let counted = 0;
  let total = 0;
  let waiting = 0;
  let pumpQueued = false;
  /** whenIdle() waiters. */
  let idleWaiters: (() => void)[] = [];

  const sweep = setInterval(sweepSlow, SWEEP_INTERVAL_MS);
  sweep.unref();

  function orgState(id: string): OrgQueue {
    let org = orgs.get(id);
    if (!org) {
      org = new OrgQueue(id);
      orgs.set(id, org);
    }
    return org;
  }

  function pump() {
    pumpQueued = false;
    const now = Date.now();
    const hasRoom = (origin: OriginState) => origin.inFlight < origins.capOf(origin, now);
    let fruitless = 0;
    // The total bound is a share per organization, never global: one tenant's hanging attempts
    // must not use up the bound for everyone. Organizations whose every waiting attempt is held
    // back by an origin cap in this pass cannot use a share: the slots are shared among the others
    // (the next pass, when an attempt ends, looks again).
    let blocked: Set<OrgQueue> | undefined;
    while (counted < maxInFlight && ring.length > 0 && fruitless < ring.length) {
      if (turn >= ring.length) turn = 0;
      const org = ring[turn] as OrgQueue;
      const sharing = Math.max(1, ring.length - (blocked?.size ?? 0));
      const share = Math.ceil(maxInFlight / sharing);
      const totalShare = Math.ceil(maxTotal / sharing);
      let attempt: WaitingAttempt | undefined;
      if (org.counted < share && org.total < totalShare && !blocked?.has(org)) {
        attempt = org.takeNext(hasRoom);
        if (!attempt) {
          blocked ??= new Set();
          blocked.add(org);
          // The others' shares just grew: those passed over for theirs may send after all.
          fruitless = 0;
        }
      }
      if (!attempt) {
        turn += 1;
        fruitless += 1;
        continue;
      }
      fruitless = 0;
      org.waiting -= 1;
      waiting -= 1;
      if (org.waiting === 0) ring.splice(turn, 1);
      else turn += 1;
      dispatch(org, attempt);
    }
    settleIdle();
  }

  function settleIdle() {
    if (waiting > 0 || counted > 0 || idleWaiters.length === 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  function schedulePump() {
    if (pumpQueued) return;
    pumpQueued = true;
    // Attempts submitted in one pass (a burst at its instant) are ordered together before sending.
    queueMicrotask(pump);
  }

  function dispatch(org: OrgQueue, attempt: WaitingAttempt) {
    const { origin } = attempt;
    const flight: InFlight = { org, startedAt: Date.now(), counted: true };
    origins.sent(origin, flight.startedAt);
    org.counted += 1;
    org.total += 1;
    counted += 1;
    total += 1;
    counting.push(flight);
    transport.send(attempt.request).then((outcome) => {
      if (flight.counted) {
        flight.counted = false;
        org.counted -= 1;
        counted -= 1;
      }
      org.total -= 1;
      total -= 1;
      origins.cameBack(origin, outcome, () => hasWaiting(origin));
      if (org.waiting === 0 && org.total === 0) orgs.delete(org.id);
      attempt.resolve(outcome);
      if (waiting > 0) schedulePump();
      else settleIdle();
    });
  }

  /** Whether any organization still queues attempts to this origin (rare: checked only when idle). */
  function hasWaiting(origin: OriginState): boolean {
    if (waiting === 0) return false;
    for (const org of ring) if (org.waitsFor(origin)) return true;
    return false;
  }

  function sweepSlow() {
    const now = Date.now();
    let freed = false;
    for (let flight = counting.peek(); flight; flight = counting.peek()) {
      if (flight.counted && now - flight.startedAt < slowAttemptMs) break;
      counting.shift();
      if (flight.counted) {
        flight.counted = false;
        flight.org.counted -= 1;
        counted -= 1;
        freed = true;
      }
    }
    if (freed && waiting > 0) schedulePump();
    else if (freed) settleIdle();
    origins.prune(now, hasWaiting);
  }

  return {
    submit(orgId, originKey, request) {
      return new Promise<AttemptOutcome>((resolve) => {
        const org = orgState(orgId);
        if (org.waiting === 0) ring.push(org);
        org.push({ request, origin: origins.stateOf(originKey), resolve });
        waiting += 1;
        schedulePump();
      });
    },
    prepare(originKey, attempts) {
      const origin = origins.find(originKey);
      // An origin capped for timing out or refusing gets no connections ahead: its attempts find out.
      if (origin?.unhealthy) return Promise.resolve();
      const cap = origins.capOf(origin, Date.now());
      return transport.preconnect(originKey, Math.min(attempts, cap, maxInFlight));
    },
    get waiting() {
      return waiting;
    },
    get inFlight() {
      return total;
    },
    get cappedOrigins() {
      return origins.capped;
    },
    whenIdle() {
      if (waiting === 0 && counted === 0) return Promise.resolve();
      return new Promise<void>((resolve) => idleWaiters.push(resolve));
    },
    close() {
      clearInterval(sweep);
    },
  };
}
