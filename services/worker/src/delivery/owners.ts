import {
  type Clock,
  type Config,
  createBatcher,
  type DeliveryOwner,
  HEARTBEAT_INTERVAL_MS,
  type Logger,
  maxAttempts,
  type ResolvedDeliveryPolicy,
  resolveRetry,
} from "@punctual/core";

// Who delivers an event or a cron run: the rule, written once, over its four sources.
//
//   1. Before the claim, the job that holds the BullMQ lock: a copy of the job whose lock was lost
//      ends without a word (the queue hands the job to another worker), and the claim is the gate
//      (events: the `lost` signal in services/worker/src/events/event-transitions.ts).
//   2. From the claim on, the worker the claim (or the last takeover) recorded in Postgres
//      (`claimed_by`), whatever becomes of the job's lock: a Redis failover longer than what was
//      left of the lock, or an event loop held up past it, puts the job back in the queue while that
//      worker still sends or retries the delivery.
//   3. That worker keeps it while its heartbeat lives in Redis: another worker taking a copy of the
//      job finds the delivery Queued and steps aside, looking again later (once the owner's heartbeat
//      would have expired, LOOK_AGAIN_MS at most). When Redis cannot say, the owner counts as alive:
//      a second send is worse than a late one.
//   4. But never longer than its delivery can last (longestDeliveryMs, from its policy): an owner
//      that held it longer let go after an infrastructure error without ending it.
//
// Once the owner is gone (no heartbeat, or over the time limit) or is nobody (a claim made before
// owners were recorded, a cron run handed back for its retry) or this worker itself, the delivery is
// taken over with one conditional update (takeOverEvents, takeOverCronRun): of two workers taking
// it over at once, one wins. This module decides 3 and 4 (`decide`); 1 and 2 are the statements'.

export interface DeliveryOwners {
  /** This worker's heartbeat id: what its claims and takeovers record. */
  readonly self: string;
  /**
   * Whether another worker holds the delivery: not one claimed before owners were recorded, nor a
   * cron run handed back for its retry, nor one of this worker's own, which it no longer holds.
   */
  heldByAnother(owner: DeliveryOwner): boolean;
  /**
   * How long `owner` keeps a delivery before this worker looks again, in ms; 0 when this worker may
   * take it over now. When Redis cannot say whether the owner lives, the owner keeps it: 5 s.
   */
  holdLeftMs(owner: DeliveryOwner, policy?: DeliveryLength): Promise<number>;
  /**
   * What a job finding the delivery Queued under `owner` does: step aside for a while, or take it
   * over. `policy`: the delivery's timeout and retries (the deployment's when absent).
   */
  decide(owner: DeliveryOwner, policy?: DeliveryLength): Promise<OwnerDecision>;
}

/** What a job does about a delivery it found Queued under another claim. */
export type OwnerDecision =
  /** The owner holds it: look again in `forMs`. */
  | { kind: "stepAside"; forMs: number }
  /** Take it over (`fromAnother`: from another worker, which was gone, rather than from nobody or itself). */
  | { kind: "takeOver"; fromAnother: boolean };

export interface DeliveryOwnersDeps {
  self: string;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, "CLAIM_LEAD_MS" | "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS" | "PREPARE_AHEAD_MS">;
  /** How long the heartbeats of `ids` last unless renewed, for those that are there (`workerHeartbeatsLeft`). */
  heartbeatsLeft: (ids: string[]) => Promise<Map<string, number>>;
}

/**
 * Time a delivery's attempts may wait for a send slot, beyond their own: the requests of a burst
 * wait for each other (50,000 due at once were all sent within 17 s).
 */
const LONGEST_SLOT_WAIT_MS = 60_000;
/**
 * A live owner's delivery is looked at again this often at most (it has usually ended by then), or
 * just after the owner's heartbeat would expire, when that comes sooner: a dead owner's delivery is
 * taken over as soon as its heartbeat is gone.
 */
const LOOK_AGAIN_MS = HEARTBEAT_INTERVAL_MS;
const PAST_EXPIRY_MS = 100;

/** What the length of a delivery follows from: its policy's timeout and retries. */
export type DeliveryLength = Pick<ResolvedDeliveryPolicy, "timeoutMs" | "retry">;

/**
 * The longest a live worker holds a delivery since its claim or takeover: the claim lead, every
 * attempt timing out, and every retry's wait as this worker holds it, at most PREPARE_AHEAD_MS (a
 * later retry, a long schedule's or a receiver's Retry-After, goes back to the queue with the claim
 * released: services/worker/src/events/event-transitions.ts).
 */
export function longestDeliveryMs(config: DeliveryOwnersDeps["config"], policy?: DeliveryLength): number {
  const retry = policy?.retry ?? resolveRetry(undefined, config);
  const attempts = maxAttempts(retry);
  const timeoutMs = policy?.timeoutMs ?? config.DELIVERY_TIMEOUT_MS;
  return config.CLAIM_LEAD_MS + attempts * timeoutMs + (attempts - 1) * config.PREPARE_AHEAD_MS + LONGEST_SLOT_WAIT_MS;
}

export function createDeliveryOwners(deps: DeliveryOwnersDeps): DeliveryOwners {
  const deploymentLongest = longestDeliveryMs(deps.config);
  // The owners asked about in one turn of the event loop (a burst's copies), in one round trip.
  const heartbeats = createBatcher(
    async (ids: string[]) => {
      const left = await deps.heartbeatsLeft([...new Set(ids)]);
      return ids.map((id) => left.get(id));
    },
    { maxBatchSize: 500 },
  );
  const heldByAnother = (owner: DeliveryOwner): owner is DeliveryOwner & { workerId: string } =>
    owner.workerId !== null && owner.workerId !== deps.self;
  async function holdLeftMs(owner: DeliveryOwner, policy?: DeliveryLength): Promise<number> {
    if (!heldByAnother(owner)) return 0;
    const longest = policy === undefined ? deploymentLongest : longestDeliveryMs(deps.config, policy);
    if (deps.clock.now().getTime() - owner.since.getTime() > longest) return 0;
    try {
      const left = await heartbeats.run(owner.workerId);
      return left === undefined ? 0 : Math.min(LOOK_AGAIN_MS, left + PAST_EXPIRY_MS);
    } catch (error) {
      // A second send is worse than a late one: the owner counts as alive.
      deps.logger.warn({ err: error, owner: owner.workerId }, "could not tell whether a delivery's worker is alive");
      return LOOK_AGAIN_MS;
    }
  }
  return {
    self: deps.self,
    heldByAnother,
    holdLeftMs,
    async decide(owner, policy) {
      const forMs = await holdLeftMs(owner, policy);
      if (forMs > 0) return { kind: "stepAside", forMs };
      return { kind: "takeOver", fromAnother: heldByAnother(owner) };
    },
  };
}
