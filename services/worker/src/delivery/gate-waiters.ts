import type { Config, HoldReason } from "@punctual/core";
import type { Admission, GateTicket } from "./flow-gate.ts";

// The attempts waiting in the gate's lines (gate-lines.ts), and how many of them this worker holds
// back. Memory stays bounded: beyond FLOW_HELD_MAX held attempts in this worker, the newest go back
// to the queue (handBack) and are looked at again FLOW_RECHECK_MS later; they wait in Redis, not in
// this heap. A delivery held past its maxAgeMs ends (expired).

export interface Waiter {
  ticket: GateTicket;
  resolve: (admission: Admission) => void;
  /** Set once it was held back: it counts as waiting from then on. */
  held: boolean;
}

/** Adds a waiter in due order (most arrive in order: the search starts from the end). */
export function enqueue(waiting: Waiter[], waiter: Waiter) {
  let at = waiting.length;
  while (at > 0 && (waiting[at - 1] as Waiter).ticket.dueAt > waiter.ticket.dueAt) at -= 1;
  waiting.splice(at, 0, waiter);
}

/** What the waiters of one line share: their order, and why the line was last held back. */
interface WaitingLine {
  waiting: Waiter[];
  reason: HoldReason | undefined;
}

export interface Waiters {
  /** Attempts held back now. */
  readonly held: number;
  /** Ends the wait with what happens to the attempt. */
  settle(waiter: Waiter, admission: Admission): void;
  /** The attempt is held back (counted once, by the reason it was first held for). */
  markHeld(waiter: Waiter, reason: HoldReason): void;
  /** Beyond FLOW_HELD_MAX, the newest of the line go back to the queue for FLOW_RECHECK_MS later. */
  keepWithinBound(line: WaitingLine): void;
  /** Ends the waits of the line's attempts whose maxAgeMs has passed; the earliest deadline still ahead. */
  expire(line: WaitingLine, now: number): number | undefined;
}

export function createWaiters(deps: {
  config: Pick<Config, "FLOW_HELD_MAX" | "FLOW_RECHECK_MS">;
  /** A delivery was held back (counted by reason). */
  metrics?: { held(reason: HoldReason): void } | undefined;
}): Waiters {
  const { config } = deps;
  let held = 0;

  function settle(waiter: Waiter, admission: Admission) {
    if (waiter.held) held -= 1;
    waiter.resolve(admission);
  }

  return {
    get held() {
      return held;
    },
    settle,
    markHeld(waiter, reason) {
      if (waiter.held) return;
      waiter.held = true;
      held += 1;
      deps.metrics?.held(reason);
    },
    keepWithinBound(line) {
      while (held > config.FLOW_HELD_MAX && line.waiting.length > 0) {
        settle(line.waiting.pop() as Waiter, { kind: "handBack", at: Date.now() + config.FLOW_RECHECK_MS });
      }
    },
    expire(line, now) {
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
    },
  };
}
