import {
  type Config,
  consumedShards,
  type EventJobData,
  eventQueuePrefixes,
  type Logger,
  QUEUE_NAMES,
  type Redis,
} from "@punctual/core";
import { Worker } from "bullmq";
import type { Bookkeeping } from "../delivery/bookkeeping.ts";
import { createJobEndings } from "./job-endings.ts";
import { createJobLocks } from "./job-locks.ts";

// How a worker takes event jobs from BullMQ ("prepare early, claim late"). A worker holds each job
// it takes from PREPARE_AHEAD_MS before its event's time until the delivery ends: tens of thousands
// of jobs before a large burst. BullMQ's own processing loop would keep, for each of them, the
// fetched Job with its parsed data and options and a chain of promises, several kilobytes a job. So
// the feed fetches jobs itself (BullMQ's manual processing), keeps only a job's id, event, lock token
// and failure count (`HeldJob`), has their locks renewed together (job-locks.ts), and ends each job
// by id (job-endings.ts: completions are bookkeeping, bookkeeping.ts, and never compete with a burst).

/** The wait after a failed fetch (Redis unreachable) before the next one. */
const FETCH_RETRY_MS = 1_000;
/**
 * Fetches in flight at once while jobs keep coming: a burst's jobs, handed over together, are taken
 * in a fraction of the time one round trip each would take. While a burst is being sent each round
 * trip waits for a turn of a busy event loop: with 8 at once the jobs of a burst larger than
 * WORKER_PREPARED_JOBS came at about 4,000 a second, and 50,000 due at once took 1.7 times as long
 * (p99 17.6–17.9 s against 9.3–11.4 s).
 */
const FETCHES_AT_ONCE = 32;
/**
 * A fetch loop at capacity waits until this share of it is free again (at most ROOM_BLOCK_MAX
 * jobs). Woken for every delivery that ends, it took a burst larger than the capacity a few jobs at
 * a time while the burst was being sent, each few read and claimed in statements of their own
 * (docs/decisions.md: the 50,000 burst, with the fetches above and the statement limits of
 * event-statements.ts).
 */
const ROOM_BLOCK_SHARE = 1 / 10;
const ROOM_BLOCK_MAX = 1_000;

/** One event job this worker holds: active in BullMQ, locked with its token. */
export class HeldJob {
  /** When its lock was last set or renewed (ms since the epoch). */
  lockedAt = Date.now();
  constructor(
    readonly id: string,
    readonly eventId: string,
    readonly token: string,
    /** BullMQ's count of failed runs: its retries after an infrastructure failure (INFRASTRUCTURE_RETRIES). */
    readonly attemptsMade: number,
    /** Index of the shard's consumer in the feed. */
    readonly shard: number,
  ) {}
}

export interface EventJobFeedDeps {
  config: Pick<Config, "QUEUE_PREFIX" | "QUEUE_SHARDS" | "WORKER_SHARDS" | "WORKER_PREPARED_JOBS" | "JOB_LOCK_MS">;
  /** A connection made with `createRedis`: each shard's consumer duplicates it. */
  redis: Redis;
  logger: Logger;
  /** When completions go out, and whether a burst is being sent (lock renewals wait for it). */
  bookkeeping: Pick<Bookkeeping, "afterSends" | "busy">;
}

export interface EventJobFeed {
  /**
   * Starts fetching: `take` gets each job taken, `lost` the held jobs whose locks could not be
   * renewed (no longer renewed from then on; the processor still ends each one).
   */
  start(take: (job: HeldJob) => void, lost: (jobs: HeldJob[]) => void): Promise<void>;
  /** The delivery ended: the job completes (once the sends are quiet). */
  complete(job: HeldJob): void;
  /** Back to the queue, due at `at` (ms since the epoch), without spending one of BullMQ's attempts. */
  handBack(job: HeldJob, at: number): void;
  /** An infrastructure failure: BullMQ's retries (INFRASTRUCTURE_RETRIES) apply to the job. */
  fail(job: HeldJob, error: Error): void;
  /**
   * Lets go of a job without a word to Redis: its lock was lost, so the queue no longer knows it as
   * this worker's. Every job taken ends with exactly one of complete, handBack, fail or forget.
   */
  forget(job: HeldJob): void;
  /** Stops taking jobs; one taken from here on goes straight back to the queue. */
  stopTaking(): void;
  /** Sends what is still to be finished, then closes the consumers. */
  close(): Promise<void>;
  /** Whether every shard's consumer is fetching. */
  isRunning(): boolean;
}

interface ShardConsumer {
  worker: Worker<EventJobData>;
  /** Numbers the lock tokens of its fetches. */
  serial: number;
  /**
   * Jobs taken and not yet let go by the processor: what counts against the capacity. A job whose
   * completion waits for a quiet moment is a few bytes and takes no room.
   */
  active: number;
  fetching: Promise<void> | undefined;
  /** Wakes its fetch loop, waiting at capacity, once a block of room is free (ROOM_BLOCK_SHARE). */
  wakeOnRoom: (() => void) | undefined;
}

export function createEventJobFeed(deps: EventJobFeedDeps): EventJobFeed {
  const { config, logger } = deps;
  const prefixes = eventQueuePrefixes(config);
  const shards = consumedShards(config);
  // The process's WORKER_PREPARED_JOBS shared between its shards, not held once per shard.
  const capacity = Math.ceil(config.WORKER_PREPARED_JOBS / shards.length);
  const roomBlock = Math.max(1, Math.min(ROOM_BLOCK_MAX, Math.floor(capacity * ROOM_BLOCK_SHARE)));
  /** One per consumed shard, made at the start. */
  let consumers: ShardConsumer[] = [];
  const consumerOf = (shard: number): ShardConsumer => {
    const worker = new Worker<EventJobData>(QUEUE_NAMES.events, undefined, {
      connection: deps.redis,
      prefix: prefixes[shard] as string,
      lockDuration: config.JOB_LOCK_MS,
      // A dead worker's jobs are found a third of a lock after their lock ran out, at worst.
      stalledInterval: Math.ceil(config.JOB_LOCK_MS / 3),
      autorun: false,
    });
    worker.on("error", (error) => logger.error({ err: error }, "event worker error"));
    return { worker, serial: 0, active: 0, fetching: undefined, wakeOnRoom: undefined };
  };
  const locks = createJobLocks({ config, logger, busy: () => deps.bookkeeping.busy });
  const endings = createJobEndings({
    logger,
    locks,
    workerOf: (shard) => (consumers[shard] as ShardConsumer).worker,
    freeRoom,
    bookkeeping: deps.bookkeeping,
  });
  let taking = false;
  let closed = false;
  /** The processor is done with the job: its room goes to the next one. */
  function freeRoom(held: HeldJob) {
    const consumer = consumers[held.shard] as ShardConsumer;
    consumer.active -= 1;
    if (consumer.active <= capacity - roomBlock) wake(consumer);
  }

  function wake(consumer: ShardConsumer) {
    const wakeOnRoom = consumer.wakeOnRoom;
    consumer.wakeOnRoom = undefined;
    wakeOnRoom?.();
  }

  /** Takes one job (waiting for one to become due when `block`); undefined when none was there. */
  async function fetchOne(consumer: ShardConsumer, shard: number, block: boolean): Promise<HeldJob | undefined> {
    const token = `${consumer.worker.id}:${consumer.serial++}`;
    const job = await consumer.worker.getNextJob(token, { block });
    if (!job?.id) return undefined;
    const held = new HeldJob(job.id, job.data.eventId, token, job.attemptsMade, shard);
    locks.hold(held);
    consumer.active += 1;
    return held;
  }

  async function fetchLoop(consumer: ShardConsumer, take: (job: HeldJob) => void) {
    const shard = consumers.indexOf(consumer);
    const hand = (held: HeldJob) => {
      if (taking) take(held);
      // Taken while stopping: another worker prepares it at once.
      else endings.handBack(held, Date.now());
    };
    /** Takes jobs without waiting until none is due or the held jobs reach capacity. */
    const drain = async () => {
      while (taking && consumer.active < capacity) {
        const held = await fetchOne(consumer, shard, false);
        if (!held) return;
        hand(held);
      }
    };
    while (taking) {
      if (consumer.active >= capacity) {
        await new Promise<void>((resolve) => {
          consumer.wakeOnRoom = resolve;
        });
        continue;
      }
      try {
        const held = await fetchOne(consumer, shard, true);
        if (!held) continue;
        hand(held);
        // One came: more are likely due together (a burst), taken several at a time.
        await Promise.all(Array.from({ length: FETCHES_AT_ONCE }, drain));
      } catch (error) {
        if (!taking) break;
        logger.error({ err: error }, "could not take an event job; trying again");
        await new Promise((resolve) => setTimeout(resolve, FETCH_RETRY_MS));
      }
    }
  }

  return {
    async start(take, lost) {
      taking = true;
      consumers = shards.map(consumerOf);
      await Promise.all(consumers.map(({ worker }) => worker.waitUntilReady()));
      locks.start(
        consumers.map(({ worker }) => worker),
        lost,
      );
      for (const consumer of consumers) {
        void consumer.worker.startStalledCheckTimer();
        consumer.fetching = fetchLoop(consumer, take).catch((error: unknown) =>
          logger.error({ err: error }, "event worker stopped"),
        );
      }
    },
    complete: endings.complete,
    handBack: endings.handBack,
    fail: endings.fail,
    forget: endings.forget,
    stopTaking() {
      taking = false;
      for (const consumer of consumers) wake(consumer);
    },
    async close() {
      if (closed) return;
      closed = true;
      taking = false;
      for (const consumer of consumers) wake(consumer);
      const renewed = locks.stop();
      await endings.settled();
      await renewed;
      // Closing a consumer ends the blocking fetch it may be waiting in.
      await Promise.all(consumers.map(({ worker }) => worker.close()));
      await Promise.all(consumers.map(({ fetching }) => fetching));
    },
    isRunning() {
      return taking && !closed && consumers.every(({ worker }) => !worker.closing);
    },
  };
}
