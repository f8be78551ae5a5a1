import type { EventState } from "@punctual/core";
import type {
  EventEffect,
  EventSignal,
  EventStage,
  EventStep,
  JobEnd,
  StageContext,
  StagedDelivery,
} from "./event-stages.ts";

// The one function that moves a held event from stage to stage (the stages are described in
// event-stages.ts): pure, so that every transition is tested alone (event-transitions.test.ts).

/**
 * A job handed over this much earlier than PREPARE_AHEAD_MS allows (the event was moved later
 * after its job was queued) goes back to the queue instead of waiting in memory.
 */
export const EARLY_SLACK_MS = 5_000;

const READ = { kind: "read" } as const;
const CLAIM = { kind: "claim" } as const;
const STOP_WAITING = { kind: "stopWaiting" } as const;
const TOOK_OVER = { kind: "tookOver" } as const;
const RELEASE_CLAIM = { kind: "releaseClaim" } as const;

const stay = <D>(stage: EventStage<D>): EventStep<D> => ({ stage, effects: [] });
const end = <D>(how: JobEnd, effects: EventEffect<D>[] = []): EventStep<D> => ({
  stage: { kind: "ended", how },
  effects,
});
const read = <D>(lost: boolean): EventStep<D> => ({
  stage: { kind: "reading", changed: false, lost },
  effects: [READ],
});
const deliver = <D extends StagedDelivery>(delivery: D, effects: EventEffect<D>[] = []): EventStep<D> => ({
  stage: { kind: "delivering", delivery },
  effects: [...effects, { kind: "send", delivery, at: delivery.dueAt.getTime(), currentSecrets: false }],
});

/** The first step of a job taken: its event is read, or, when the worker is stopping, the job goes back at once. */
export function takenStep<D>(context: StageContext): EventStep<D> {
  // Handed back as the queue would have handed it over: another worker prepares it at once.
  if (context.stopping) return end({ kind: "handBack", at: context.now });
  return read(false);
}

function unexpected(stage: EventStage<unknown>, signal: EventSignal<unknown>): never {
  throw new Error(`event stage ${stage.kind} got the answer ${signal.kind}, which it did not ask for`);
}

/** The next stage of an event in `stage` on `signal`, and what to do for it. */
export function nextStage<D extends StagedDelivery>(
  stage: EventStage<D>,
  signal: EventSignal<D>,
  context: StageContext,
): EventStep<D> {
  switch (stage.kind) {
    case "reading":
      return fromReading(stage, signal, context);
    case "prepared":
      return fromPrepared(stage, signal, context);
    case "claiming":
      return fromClaiming(stage, signal);
    case "checkingOwner":
      return fromCheckingOwner(stage, signal, context);
    case "takingOver":
      return fromTakingOver(stage, signal);
    case "delivering":
      return fromDelivering(stage, signal, context);
    case "retrying":
      return fromRetrying(stage, signal);
    case "ended":
      // Nothing moves an ended event; the driver no longer signals it.
      return stay(stage);
  }
}

type StageOf<D, K extends EventStage<D>["kind"]> = Extract<EventStage<D>, { kind: K }>;

function fromReading<D>(stage: StageOf<D, "reading">, signal: EventSignal<D>, context: StageContext): EventStep<D> {
  switch (signal.kind) {
    case "changed":
      return stay({ ...stage, changed: true });
    case "lost":
      return stay({ ...stage, lost: true });
    case "stop":
    case "due":
      return stay(stage);
    case "failed":
      return end({ kind: "fail", error: signal.error });
    case "read":
      return afterRead(stage, signal.state, context);
    default:
      return unexpected(stage, signal);
  }
}

function afterRead<D>(
  stage: StageOf<D, "reading">,
  state: EventState | undefined,
  context: StageContext,
): EventStep<D> {
  // The queue lost this job (Redis flushed, say) and the reconciler queues the event again: that
  // new job delivers it, this copy must not claim it too (before the claim the lock decides who
  // delivers: the rule is written in owners.ts).
  if (stage.lost) return end({ kind: "forget" });
  if (!state || (state.status !== "Pending" && state.status !== "Queued")) return end({ kind: "complete" });
  // Already Queued: its delivery resumes after a worker died (the claim finds its owner).
  if (state.status === "Queued") return { stage: { kind: "claiming", lost: false }, effects: [CLAIM] };
  // Edited while being read: what was read may be older than the edit.
  if (stage.changed) return read(false);
  const due = state.scheduledTime.getTime();
  const claimAt = due - context.claimLeadMs;
  // Handed back as the queue would have handed it over: another worker prepares it at once.
  if (context.stopping) return end({ kind: "handBack", at: due - context.prepareAheadMs });
  // Moved later than the prepare window: the queue holds it until then, not this memory.
  if (claimAt - context.now > context.prepareAheadMs + EARLY_SLACK_MS) {
    return end({ kind: "handBack", at: due - context.prepareAheadMs });
  }
  return { stage: { kind: "prepared", claimAt }, effects: [{ kind: "wait", at: claimAt }] };
}

function fromPrepared<D>(stage: StageOf<D, "prepared">, signal: EventSignal<D>, context: StageContext): EventStep<D> {
  switch (signal.kind) {
    case "due":
      return { stage: { kind: "claiming", lost: false }, effects: [CLAIM] };
    case "changed":
      return { stage: { kind: "reading", changed: false, lost: false }, effects: [STOP_WAITING, READ] };
    case "lost":
      return end({ kind: "forget" });
    case "stop":
      // Handed back as the queue would have handed it over: another worker prepares it at once.
      return end({ kind: "handBack", at: stage.claimAt + context.claimLeadMs - context.prepareAheadMs });
    default:
      return unexpected(stage, signal);
  }
}

/**
 * A stage waiting for a statement's answer (the claim, the owner's, the takeover's) keeps it through
 * an edit (the statement's conditions judge it: a claim takes only a Pending event, due) and a stop
 * (what is being claimed is finished, not handed back); a lost lock is noted for a later read.
 */
function whileAsking<D>(stage: StageOf<D, "claiming" | "checkingOwner" | "takingOver">, signal: EventSignal<D>) {
  switch (signal.kind) {
    case "changed":
    case "stop":
    case "due":
      return stay<D>(stage);
    case "lost":
      return stay<D>({ ...stage, lost: true });
    case "failed":
      return end<D>({ kind: "fail", error: signal.error });
    default:
      return undefined;
  }
}

function fromClaiming<D extends StagedDelivery>(stage: StageOf<D, "claiming">, signal: EventSignal<D>): EventStep<D> {
  const meanwhile = whileAsking(stage, signal);
  if (meanwhile) return meanwhile;
  if (signal.kind !== "claim") return unexpected(stage, signal);
  const { answer } = signal;
  switch (answer.kind) {
    // Claimed: the delivery is this worker's, whatever became of the job's lock meanwhile.
    case "claimed":
      return deliver(answer.delivery);
    case "resumed":
      return {
        stage: { kind: "checkingOwner", delivery: answer.delivery, owner: answer.owner, lost: stage.lost },
        effects: [{ kind: "checkOwner", owner: answer.owner, delivery: answer.delivery }],
      };
    // Moved later between the read and the claim: prepared again for its new time.
    case "not-due":
      return read(stage.lost);
    case "finished":
      return end({ kind: "complete" });
  }
}

function fromCheckingOwner<D>(
  stage: StageOf<D, "checkingOwner">,
  signal: EventSignal<D>,
  context: StageContext,
): EventStep<D> {
  const meanwhile = whileAsking(stage, signal);
  if (meanwhile) return meanwhile;
  switch (signal.kind) {
    case "owner": {
      const { owner } = stage;
      const { decision } = signal;
      // The owner delivers it: this copy of the job steps aside and looks again later.
      if (decision.kind === "stepAside") {
        return end({ kind: "handBack", at: context.now + decision.forMs }, [
          { kind: "steppedAside", owner, forMs: decision.forMs },
        ]);
      }
      return {
        stage: { kind: "takingOver", delivery: stage.delivery, lost: stage.lost, fromAnother: decision.fromAnother },
        effects: [{ kind: "takeOver", owner }],
      };
    }
    default:
      return unexpected(stage, signal);
  }
}

function fromTakingOver<D extends StagedDelivery>(
  stage: StageOf<D, "takingOver">,
  signal: EventSignal<D>,
): EventStep<D> {
  const meanwhile = whileAsking(stage, signal);
  if (meanwhile) return meanwhile;
  switch (signal.kind) {
    case "takeover":
      // Lost to a change (another worker took it over, or the delivery ended): read again.
      if (!signal.won) return read(stage.lost);
      return deliver(stage.delivery, stage.fromAnother ? [TOOK_OVER] : []);
    default:
      return unexpected(stage, signal);
  }
}

function fromDelivering<D>(
  stage: StageOf<D, "delivering">,
  signal: EventSignal<D>,
  context: StageContext,
): EventStep<D> {
  switch (signal.kind) {
    // The delivery is this worker's since its claim: an edit is refused by the API, a lost lock
    // changes nothing, and a stop waits for the attempt.
    case "changed":
    case "lost":
    case "stop":
    case "due":
      return stay(stage);
    case "failed":
      return end({ kind: "fail", error: signal.error });
    // Not sent: whichever worker takes the job at `at` takes the delivery over at once.
    case "heldBack":
      return end({ kind: "handBack", at: signal.at }, [RELEASE_CLAIM]);
    case "settled": {
      const { retryAt } = signal;
      if (retryAt === undefined) return end({ kind: "complete" });
      // The retry waits here (the event stays Queued, the job held); a stopping worker hands it back.
      if (context.stopping) return end({ kind: "handBack", at: retryAt });
      // Later than the prepare window (a long schedule, a receiver's Retry-After): the queue holds it
      // until its time, not this memory, and whichever worker takes it then delivers it.
      if (retryAt - context.now > context.prepareAheadMs) {
        return end({ kind: "handBack", at: retryAt }, [RELEASE_CLAIM]);
      }
      return {
        stage: { kind: "retrying", delivery: stage.delivery, retryAt },
        effects: [{ kind: "wait", at: retryAt }],
      };
    }
    default:
      return unexpected(stage, signal);
  }
}

function fromRetrying<D>(stage: StageOf<D, "retrying">, signal: EventSignal<D>): EventStep<D> {
  switch (signal.kind) {
    case "changed":
    case "lost":
      return stay(stage);
    case "due":
      return {
        stage: { kind: "delivering", delivery: stage.delivery },
        effects: [{ kind: "send", delivery: stage.delivery, at: stage.retryAt, currentSecrets: true }],
      };
    case "stop":
      return end({ kind: "handBack", at: stage.retryAt });
    default:
      return unexpected(stage, signal);
  }
}
