import type { DeliveryOwner, EventState } from "@punctual/core";
import { describe, expect, it } from "vitest";
import type { EventSignal, EventStage, EventStep, StageContext } from "./event-stages.ts";
import { EARLY_SLACK_MS, nextStage, takenStep } from "./event-transitions.ts";

// Every transition of a held event (event-stages.ts describes the stages), as a pure function:
// edits and cancels, a lost lock, a takeover and a stop, in each stage.

const NOW = Date.parse("2030-01-01T00:00:00Z");
const CLAIM_LEAD_MS = 1_000;
const PREPARE_AHEAD_MS = 30_000;
const context: StageContext = {
  now: NOW,
  stopping: false,
  claimLeadMs: CLAIM_LEAD_MS,
  prepareAheadMs: PREPARE_AHEAD_MS,
};
const stopping: StageContext = { ...context, stopping: true };

/** A claimed event's delivery, as the transitions see it. */
interface Delivery {
  name: string;
  dueAt: Date;
}
const DUE = NOW + 20_000;
const delivery: Delivery = { name: "evt_1", dueAt: new Date(DUE) };
const owner: DeliveryOwner = { workerId: "wrk_other", since: new Date(NOW - 5_000) };

type Stage = EventStage<Delivery>;
type Signal = EventSignal<Delivery>;
const step = (stage: Stage, signal: Signal, at: StageContext = context): EventStep<Delivery> =>
  nextStage(stage, signal, at);

const pending = (due = DUE): EventState => ({ status: "Pending", scheduledTime: new Date(due) });
const withStatus = (status: string): EventState => ({ status, scheduledTime: new Date(DUE) });

const reading: Stage = { kind: "reading", changed: false, lost: false };
const prepared: Stage = { kind: "prepared", claimAt: DUE - CLAIM_LEAD_MS };
const claiming: Stage = { kind: "claiming", lost: false };
const checkingOwner: Stage = { kind: "checkingOwner", delivery, owner, lost: false };
const takingOver: Stage = { kind: "takingOver", delivery, lost: false, fromAnother: true };
const delivering: Stage = { kind: "delivering", delivery };
const RETRY_AT = NOW + 3_000;
const retrying: Stage = { kind: "retrying", delivery, retryAt: RETRY_AT };

const CHANGED: Signal = { kind: "changed" };
const LOST: Signal = { kind: "lost" };
const STOP: Signal = { kind: "stop" };
const DUE_NOW: Signal = { kind: "due" };
const failure = new Error("connection terminated");
const FAILED: Signal = { kind: "failed", error: failure };
const read = (state: EventState | undefined): Signal => ({ kind: "read", state });
const SEND_FIRST = { kind: "send", delivery, at: DUE, currentSecrets: false } as const;

/** Applies the signals one after the other, from `stage`. */
function walk(stage: Stage, signals: Signal[], at: StageContext = context): EventStep<Delivery> {
  let current: EventStep<Delivery> = { stage, effects: [] };
  for (const signal of signals) current = step(current.stage, signal, at);
  return current;
}

/** The signals a stage leaves as it is, without effects. */
function itIgnores(stage: Stage, signals: Signal[]) {
  for (const signal of signals) {
    it(`stays as it is on ${signal.kind}`, () => {
      expect(step(stage, signal)).toEqual({ stage, effects: [] });
    });
  }
}

/** The answers a stage did not ask for: a fault of the driver, thrown. */
function itRefuses(stage: Stage, signals: Signal[]) {
  for (const signal of signals) {
    it(`refuses the answer ${signal.kind}, which it did not ask for`, () => {
      expect(() => step(stage, signal)).toThrow(/did not ask for/);
    });
  }
}

describe("a job taken", () => {
  it("has its event read", () => {
    expect(takenStep(context)).toEqual({ stage: reading, effects: [{ kind: "read" }] });
  });

  it("goes straight back to the queue while the worker stops", () => {
    expect(takenStep(stopping)).toEqual({ stage: { kind: "ended", how: { kind: "handBack", at: NOW } }, effects: [] });
  });
});

describe("reading", () => {
  it("prepares a Pending event and waits for its claim time, CLAIM_LEAD_MS before the event's", () => {
    expect(step(reading, read(pending()))).toEqual({
      stage: prepared,
      effects: [{ kind: "wait", at: DUE - CLAIM_LEAD_MS }],
    });
  });

  it("prepares an event due at the far end of the prepare window and its slack", () => {
    const due = NOW + CLAIM_LEAD_MS + PREPARE_AHEAD_MS + EARLY_SLACK_MS;
    expect(step(reading, read(pending(due))).stage).toEqual({ kind: "prepared", claimAt: due - CLAIM_LEAD_MS });
  });

  it("hands back an event moved later than the prepare window, due PREPARE_AHEAD_MS before its time", () => {
    const due = NOW + CLAIM_LEAD_MS + PREPARE_AHEAD_MS + EARLY_SLACK_MS + 1;
    expect(step(reading, read(pending(due)))).toEqual({
      stage: { kind: "ended", how: { kind: "handBack", at: due - PREPARE_AHEAD_MS } },
      effects: [],
    });
  });

  it("claims an event found Queued already (its delivery resumes)", () => {
    expect(step(reading, read(withStatus("Queued")))).toEqual({ stage: claiming, effects: [{ kind: "claim" }] });
  });

  for (const status of ["Sent", "Failed To Send", "Cancelled", "Failed To Queue"]) {
    it(`completes the job of an event found ${status}`, () => {
      expect(step(reading, read(withStatus(status))).stage).toEqual({ kind: "ended", how: { kind: "complete" } });
    });
  }

  it("completes the job of an event that is gone", () => {
    expect(step(reading, read(undefined)).stage).toEqual({ kind: "ended", how: { kind: "complete" } });
  });

  it("reads again a Pending event edited while it was read", () => {
    const edited = step(reading, CHANGED);
    expect(edited).toEqual({ stage: { kind: "reading", changed: true, lost: false }, effects: [] });
    expect(step(edited.stage, read(pending()))).toEqual({ stage: reading, effects: [{ kind: "read" }] });
  });

  it("completes the job of an event cancelled while it was read, without reading it again", () => {
    expect(walk(reading, [CHANGED, read(withStatus("Cancelled"))]).stage).toEqual({
      kind: "ended",
      how: { kind: "complete" },
    });
  });

  it("forgets a job whose lock was lost while it was read, whatever the answer", () => {
    const lost = step(reading, LOST);
    expect(lost).toEqual({ stage: { kind: "reading", changed: false, lost: true }, effects: [] });
    for (const state of [pending(), withStatus("Queued"), withStatus("Sent"), undefined]) {
      expect(step(lost.stage, read(state)).stage).toEqual({ kind: "ended", how: { kind: "forget" } });
    }
  });

  it("hands a Pending event back once read while the worker stops, due PREPARE_AHEAD_MS before its time", () => {
    expect(step(reading, STOP)).toEqual({ stage: reading, effects: [] });
    expect(step(reading, read(pending()), stopping).stage).toEqual({
      kind: "ended",
      how: { kind: "handBack", at: DUE - PREPARE_AHEAD_MS },
    });
  });

  it("still claims a Queued event read while the worker stops: a claimed delivery is finished", () => {
    expect(step(reading, read(withStatus("Queued")), stopping).stage).toEqual(claiming);
  });

  it("fails the job when the read fails", () => {
    expect(step(reading, FAILED)).toEqual({
      stage: { kind: "ended", how: { kind: "fail", error: failure } },
      effects: [],
    });
  });

  itIgnores(reading, [DUE_NOW]);
  itRefuses(reading, [
    { kind: "claim", answer: { kind: "finished" } },
    { kind: "settled", retryAt: undefined },
    { kind: "heldBack", at: NOW },
  ]);
});

describe("prepared", () => {
  it("is claimed at its claim time", () => {
    expect(step(prepared, DUE_NOW)).toEqual({ stage: claiming, effects: [{ kind: "claim" }] });
  });

  it("calls off its wait and reads the event again on an edit or a cancel (the read tells which)", () => {
    const edited = step(prepared, CHANGED);
    expect(edited).toEqual({ stage: reading, effects: [{ kind: "stopWaiting" }, { kind: "read" }] });
    expect(step(edited.stage, read(pending(DUE - 5_000))).stage).toEqual({
      kind: "prepared",
      claimAt: DUE - 5_000 - CLAIM_LEAD_MS,
    });
    expect(step(edited.stage, read(withStatus("Cancelled"))).stage).toEqual({
      kind: "ended",
      how: { kind: "complete" },
    });
  });

  it("forgets its job when the lock is lost: the queue's copy delivers the event", () => {
    expect(step(prepared, LOST)).toEqual({ stage: { kind: "ended", how: { kind: "forget" } }, effects: [] });
  });

  it("goes back to the queue at a stop, due PREPARE_AHEAD_MS before the event's time", () => {
    expect(step(prepared, STOP)).toEqual({
      stage: { kind: "ended", how: { kind: "handBack", at: DUE - PREPARE_AHEAD_MS } },
      effects: [],
    });
  });

  itRefuses(prepared, [read(pending()), { kind: "takeover", won: true }, FAILED]);
});

describe("claiming", () => {
  it("delivers what the claim returns, its first attempt at the event's time", () => {
    expect(step(claiming, { kind: "claim", answer: { kind: "claimed", delivery } })).toEqual({
      stage: delivering,
      effects: [SEND_FIRST],
    });
  });

  it("delivers a claimed event even when its job's lock was lost meanwhile: the claim made it this worker's", () => {
    expect(walk(claiming, [LOST, { kind: "claim", answer: { kind: "claimed", delivery } }]).stage).toEqual(delivering);
  });

  it("asks about the owner of an event found Queued", () => {
    expect(step(claiming, { kind: "claim", answer: { kind: "resumed", delivery, owner } })).toEqual({
      stage: checkingOwner,
      effects: [{ kind: "checkOwner", owner, delivery }],
    });
  });

  it("reads again an event moved later before the claim", () => {
    expect(step(claiming, { kind: "claim", answer: { kind: "not-due" } })).toEqual({
      stage: reading,
      effects: [{ kind: "read" }],
    });
  });

  it("forgets, after reading it again, an event moved later whose lock was lost meanwhile", () => {
    const moved = walk(claiming, [LOST, { kind: "claim", answer: { kind: "not-due" } }]);
    expect(moved.stage).toEqual({ kind: "reading", changed: false, lost: true });
    expect(step(moved.stage, read(pending())).stage).toEqual({ kind: "ended", how: { kind: "forget" } });
  });

  it("lets the claim judge an edit: a cancel that came first wins, and the job completes", () => {
    expect(step(claiming, CHANGED)).toEqual({ stage: claiming, effects: [] });
    expect(walk(claiming, [CHANGED, { kind: "claim", answer: { kind: "finished" } }]).stage).toEqual({
      kind: "ended",
      how: { kind: "complete" },
    });
  });

  it("notes a lost lock", () => {
    expect(step(claiming, LOST)).toEqual({ stage: { kind: "claiming", lost: true }, effects: [] });
  });

  it("fails the job when the claim fails", () => {
    expect(step(claiming, FAILED).stage).toEqual({ kind: "ended", how: { kind: "fail", error: failure } });
  });

  itIgnores(claiming, [STOP, DUE_NOW]);
  itRefuses(claiming, [read(pending()), { kind: "owner", decision: { kind: "takeOver", fromAnother: true } }]);
});

describe("checkingOwner", () => {
  it("steps aside while the owner holds the delivery: back to the queue until the owner is looked at again", () => {
    expect(step(checkingOwner, { kind: "owner", decision: { kind: "stepAside", forMs: 4_000 } })).toEqual({
      stage: { kind: "ended", how: { kind: "handBack", at: NOW + 4_000 } },
      effects: [{ kind: "steppedAside", owner, forMs: 4_000 }],
    });
  });

  it("takes the delivery over once the owner is gone", () => {
    expect(step(checkingOwner, { kind: "owner", decision: { kind: "takeOver", fromAnother: true } })).toEqual({
      stage: takingOver,
      effects: [{ kind: "takeOver", owner }],
    });
  });

  it("carries a lost lock into the takeover", () => {
    expect(
      walk(checkingOwner, [LOST, { kind: "owner", decision: { kind: "takeOver", fromAnother: false } }]).stage,
    ).toEqual({
      kind: "takingOver",
      delivery,
      lost: true,
      fromAnother: false,
    });
  });

  it("fails the job when the owner cannot be asked about", () => {
    expect(step(checkingOwner, FAILED).stage).toEqual({ kind: "ended", how: { kind: "fail", error: failure } });
  });

  itIgnores(checkingOwner, [CHANGED, STOP, DUE_NOW]);
  itRefuses(checkingOwner, [{ kind: "takeover", won: true }, read(pending())]);
});

describe("takingOver", () => {
  it("delivers a delivery won from another worker, counted as a takeover", () => {
    expect(step(takingOver, { kind: "takeover", won: true })).toEqual({
      stage: delivering,
      effects: [{ kind: "tookOver" }, SEND_FIRST],
    });
  });

  it("delivers without counting a takeover of a delivery nobody held (or this worker's own)", () => {
    expect(
      step({ kind: "takingOver", delivery, lost: false, fromAnother: false }, { kind: "takeover", won: true }),
    ).toEqual({
      stage: delivering,
      effects: [SEND_FIRST],
    });
  });

  it("reads the event again when the takeover lost to a change (another took it over, or it ended)", () => {
    expect(step(takingOver, { kind: "takeover", won: false })).toEqual({ stage: reading, effects: [{ kind: "read" }] });
  });

  it("forgets, after reading it again, a lost takeover whose lock was lost meanwhile", () => {
    const lost = walk(takingOver, [LOST, { kind: "takeover", won: false }]);
    expect(lost.stage).toEqual({ kind: "reading", changed: false, lost: true });
    expect(step(lost.stage, read(withStatus("Queued"))).stage).toEqual({ kind: "ended", how: { kind: "forget" } });
  });

  it("fails the job when the takeover fails", () => {
    expect(step(takingOver, FAILED).stage).toEqual({ kind: "ended", how: { kind: "fail", error: failure } });
  });

  itIgnores(takingOver, [CHANGED, STOP, DUE_NOW]);
  itRefuses(takingOver, [{ kind: "owner", decision: { kind: "takeOver", fromAnother: true } }]);
});

describe("delivering", () => {
  it("completes the job when the delivery is over", () => {
    expect(step(delivering, { kind: "settled", retryAt: undefined })).toEqual({
      stage: { kind: "ended", how: { kind: "complete" } },
      effects: [],
    });
  });

  it("waits in memory for a retry", () => {
    expect(step(delivering, { kind: "settled", retryAt: RETRY_AT })).toEqual({
      stage: retrying,
      effects: [{ kind: "wait", at: RETRY_AT }],
    });
  });

  it("waits in memory for a retry as late as the prepare window, not later", () => {
    const atWindow = NOW + PREPARE_AHEAD_MS;
    expect(step(delivering, { kind: "settled", retryAt: atWindow }).stage).toEqual({
      kind: "retrying",
      delivery,
      retryAt: atWindow,
    });
  });

  it("hands a retry later than the prepare window back to the queue, due at its time, and releases the claim", () => {
    const later = NOW + PREPARE_AHEAD_MS + 1;
    expect(step(delivering, { kind: "settled", retryAt: later })).toEqual({
      stage: { kind: "ended", how: { kind: "handBack", at: later } },
      effects: [{ kind: "releaseClaim" }],
    });
  });

  it("hands a retry back to the queue, due at its time, while the worker stops", () => {
    expect(step(delivering, { kind: "settled", retryAt: RETRY_AT }, stopping).stage).toEqual({
      kind: "ended",
      how: { kind: "handBack", at: RETRY_AT },
    });
  });

  it("fails the job when the attempt cannot be recorded", () => {
    expect(step(delivering, FAILED).stage).toEqual({ kind: "ended", how: { kind: "fail", error: failure } });
  });

  it("hands an attempt its flow gate held back to the queue, due when the gate says, and releases the claim", () => {
    const at = NOW + 5_000;
    expect(step(delivering, { kind: "heldBack", at })).toEqual({
      stage: { kind: "ended", how: { kind: "handBack", at } },
      effects: [{ kind: "releaseClaim" }],
    });
  });

  // The API refuses to edit a Queued event, the delivery is this worker's since its claim, and a
  // stop waits for the attempt in flight.
  itIgnores(delivering, [CHANGED, LOST, STOP, DUE_NOW]);
  itRefuses(delivering, [{ kind: "claim", answer: { kind: "finished" } }, read(undefined)]);
});

describe("retrying", () => {
  it("sends the next attempt at its time, signed with the secrets of that time", () => {
    expect(step(retrying, DUE_NOW)).toEqual({
      stage: delivering,
      effects: [{ kind: "send", delivery, at: RETRY_AT, currentSecrets: true }],
    });
  });

  it("goes back to the queue at a stop, due at the retry's time", () => {
    expect(step(retrying, STOP)).toEqual({
      stage: { kind: "ended", how: { kind: "handBack", at: RETRY_AT } },
      effects: [],
    });
  });

  itIgnores(retrying, [CHANGED, LOST]);
  itRefuses(retrying, [{ kind: "settled", retryAt: undefined }, { kind: "heldBack", at: NOW }, FAILED]);
});

describe("ended", () => {
  const ended: Stage = { kind: "ended", how: { kind: "complete" } };
  itIgnores(ended, [CHANGED, LOST, STOP, DUE_NOW, FAILED, read(pending())]);
});

describe("one event from its job to Sent", () => {
  it("goes reading → prepared → claiming → delivering → retrying → delivering → ended", () => {
    const kinds: string[] = [];
    let current = takenStep<Delivery>(context);
    const signals: Signal[] = [
      read(pending()),
      DUE_NOW,
      { kind: "claim", answer: { kind: "claimed", delivery } },
      { kind: "settled", retryAt: RETRY_AT },
      DUE_NOW,
      { kind: "settled", retryAt: undefined },
    ];
    kinds.push(current.stage.kind);
    for (const signal of signals) {
      current = step(current.stage, signal);
      kinds.push(current.stage.kind);
    }
    expect(kinds).toEqual(["reading", "prepared", "claiming", "delivering", "retrying", "delivering", "ended"]);
    expect(current.stage).toEqual({ kind: "ended", how: { kind: "complete" } });
  });
});
