import type { DeliveryOwner, EventState } from "@punctual/core";
import type { OwnerDecision } from "../delivery/owners.ts";

// Where one event held by a worker stands, as data, and the one function that moves it: a stage and
// a signal in, the next stage and the effects to run out (event-transitions.ts). No I/O, no timers,
// no clock: the driver (deliver-event.ts) runs the effects and turns their answers into the next
// signals. Every transition is tested in event-transitions.test.ts.
//
// The stages, in the order an event goes through them (each: how it is entered, how it is left, and
// which signals may move it):
//
//   reading        Entered when the job is taken, when an edit is announced in `prepared`, and when
//                  a claim or takeover finds the event other than expected. Waits for the `read` of
//                  its status and time. Left by that answer: `prepared`, `claiming` (found Queued),
//                  or ended. An edit (`changed`) or a lost lock (`lost`) is noted and applied to
//                  the answer.
//   prepared       Pending and due within the prepare window: waits for its claim time
//                  (CLAIM_LEAD_MS before the event's), still editable and cancellable. Left by `due`
//                  (claiming), by an edit (reading again), by a lost lock (ended, the queue's copy
//                  delivers it) or by a stop (ended, handed back to the queue).
//   claiming       The conditional claim (Pending → Queued) is under way. Left by its answer:
//                  `delivering` when claimed, `checkingOwner` when found Queued already, `reading`
//                  when moved later, ended when final or gone. An edit changes nothing here: the
//                  claim's conditions judge it.
//   checkingOwner  Found Queued: another claim holds the delivery. Left by what owners.ts decides: the
//                  job steps aside (ended, handed back until the owner's heartbeat would expire)
//                  while the owner holds it, or `takingOver` once the owner is gone.
//   takingOver     The takeover (one conditional update) is under way. Left by its answer:
//                  `delivering` when won, `reading` when something changed since the claim read it.
//   delivering     Claimed by this worker: its attempt, signed for `at`, waits for its instant, for
//                  its flow and its origin's health (flow-gate.ts), is in flight or is being
//                  recorded. Only the recorded outcome moves it (it ends, or waits in `retrying`), or
//                  the gate handing it back (`heldBack`: ended, back to the queue, claim let go). The delivery is this worker's since its claim, also after
//                  its job's lock is lost, and the API refuses to edit a Queued event.
//   retrying       Claimed, a failed attempt recorded: waits for the next attempt's time, at most
//                  PREPARE_AHEAD_MS away (a later retry is not held in memory: the job goes back
//                  to the queue for that time and the claim is released, so that any worker takes
//                  the delivery over then). Left by `due` (delivering, signed with the secrets of
//                  its own time) or by a stop (ended, handed back to the queue for that time).
//   ended          Terminal: how the job ends (completed, handed back, failed, or forgotten after
//                  its lock was lost). The driver's one `end` finishes the job that way.
//
// Signals of the worker itself (`changed`, `lost`, `stop`, `due`) may come in any stage; those that
// do not concern a stage leave it as it is. The answers (`read`, `claim`, `owner`, `takeover`,
// `settled`, `heldBack`, `failed`) come only to the stage that asked: any other is a fault of the driver.

/** How a job ends: the job feed's action for it. */
export type JobEnd =
  /** The event needs nothing more (delivered, failed to send, cancelled or gone). */
  | { kind: "complete" }
  /** Back to the queue, due at `at` (ms since the epoch). */
  | { kind: "handBack"; at: number }
  /** A statement failed beyond its retries: BullMQ's retries of the job take over. */
  | { kind: "fail"; error: unknown }
  /** The job's lock was lost before the claim: the queue's copy delivers the event, not this one. */
  | { kind: "forget" };

/** The stages of a held event; `D` is a claimed event's delivery (what its attempts send). */
export type EventStage<D> =
  | { kind: "reading"; changed: boolean; lost: boolean }
  | { kind: "prepared"; claimAt: number }
  | { kind: "claiming"; lost: boolean }
  | { kind: "checkingOwner"; delivery: D; owner: DeliveryOwner; lost: boolean }
  | { kind: "takingOver"; delivery: D; lost: boolean; fromAnother: boolean }
  | { kind: "delivering"; delivery: D }
  | { kind: "retrying"; delivery: D; retryAt: number }
  | { kind: "ended"; how: JobEnd };

/** What the claim statement found, with the delivery it loaded (core's ClaimResult, per event). */
export type ClaimAnswer<D> =
  | { kind: "claimed"; delivery: D }
  | { kind: "resumed"; delivery: D; owner: DeliveryOwner }
  | { kind: "not-due" }
  | { kind: "finished" };

export type EventSignal<D> =
  /** The API announced an edit or a cancel of the event. */
  | { kind: "changed" }
  /** The job feed could not renew the job's lock: the queue may hand the job to another worker. */
  | { kind: "lost" }
  /** The worker stops: what only waits goes back to the queue. */
  | { kind: "stop" }
  /** The time the stage waits for (its claim or its retry) has come. */
  | { kind: "due" }
  /** The event's status and time; undefined when it is gone. */
  | { kind: "read"; state: EventState | undefined }
  | { kind: "claim"; answer: ClaimAnswer<D> }
  /** What to do about the owner of the delivery (owners.ts decides, from its heartbeat and the time limit). */
  | { kind: "owner"; decision: OwnerDecision }
  | { kind: "takeover"; won: boolean }
  /** The attempt is recorded: when the next is due, or undefined when the delivery is over. */
  | { kind: "settled"; retryAt: number | undefined }
  /**
   * The flow gate held the attempt back longer than the worker keeps it (FLOW_HELD_MAX), or the
   * worker stops: not sent, it waits in the queue until `at`.
   */
  | { kind: "heldBack"; at: number }
  /** The statement asked for failed beyond its retries. */
  | { kind: "failed"; error: unknown };

export type EventEffect<D> =
  /** Read the event's status and time. */
  | { kind: "read" }
  /** Wake the event with `due` at `at` (ms since the epoch). */
  | { kind: "wait"; at: number }
  /** Call off the wait set last. */
  | { kind: "stopWaiting" }
  /** Claim the event (Pending → Queued when due). */
  | { kind: "claim" }
  /** Ask how long `owner` keeps the delivery (how long it can last follows from its policy). */
  | { kind: "checkOwner"; owner: DeliveryOwner; delivery: D }
  /** Take the delivery over from `owner`, if nothing changed since it was read. */
  | { kind: "takeOver"; owner: DeliveryOwner }
  /** Sign the attempt due at `at` (with the organization's current secrets when `currentSecrets`), send it then and record it. */
  | { kind: "send"; delivery: D; at: number; currentSecrets: boolean }
  /** The owner holds the delivery: this job steps aside for `forMs` (counted and logged). */
  | { kind: "steppedAside"; owner: DeliveryOwner; forMs: number }
  /** The delivery was taken over from another worker that was gone (counted). */
  | { kind: "tookOver" }
  /**
   * Let go of this worker's claim: the next attempt waits in the queue, and whichever worker takes
   * the job then takes the delivery over at once (releaseClaims).
   */
  | { kind: "releaseClaim" };

export interface EventStep<D> {
  stage: EventStage<D>;
  effects: EventEffect<D>[];
}

/** What the transitions need to know of the worker at the moment of the signal. */
export interface StageContext {
  /** Now, ms since the epoch. */
  readonly now: number;
  /** The worker is stopping: it hands back what would only wait. */
  readonly stopping: boolean;
  readonly claimLeadMs: number;
  readonly prepareAheadMs: number;
}

/** A delivery as the transitions see it: when its first attempt is due. */
export interface StagedDelivery {
  readonly dueAt: Date;
}
