import { EVENT_JOB_NAME, EVENT_JOB_OPTIONS, type EventJobData, type Logger } from "@punctual/core";
import { Job, type Worker } from "bullmq";
import type { Bookkeeping } from "../delivery/bookkeeping.ts";
import type { HeldJob } from "./event-job-feed.ts";
import type { JobLocks } from "./job-locks.ts";

// How an event job a worker took ends in BullMQ: with exactly one of complete, handBack, fail or
// forget. Each gives the job's room among the held jobs back at once; the Redis command follows,
// and the job's lock stops being renewed once it has run. A job is finished by id, with the options
// every event job is queued with (EVENT_JOB_OPTIONS), so no BullMQ Job is kept while it is held.
// Completions are bookkeeping (bookkeeping.ts): they wait until the sends are quiet and go
// FINISH_BATCH at a time, so BullMQ's work never competes with a burst.

/** Completions sent to Redis at once. */
const FINISH_BATCH = 500;

export interface JobEndingsDeps {
  logger: Logger;
  locks: Pick<JobLocks, "release">;
  /** The consumer (BullMQ worker) of a shard, by index. */
  workerOf(shard: number): Worker<EventJobData>;
  /** The job no longer takes room among the held jobs. */
  freeRoom(job: HeldJob): void;
  /** Completions wait for the sends (bookkeeping.ts). */
  bookkeeping: Pick<Bookkeeping, "afterSends">;
}

export interface JobEndings {
  /** The delivery ended: the job completes (once the sends are quiet). */
  complete(job: HeldJob): void;
  /** Back to the queue, due at `at` (ms since the epoch), without spending one of BullMQ's attempts. */
  handBack(job: HeldJob, at: number): void;
  /** An infrastructure failure: BullMQ's retries (INFRASTRUCTURE_RETRIES) apply to the job. */
  fail(job: HeldJob, error: Error): void;
  /** Without a word to Redis: its lock was lost, so the queue no longer knows it as this worker's. */
  forget(job: HeldJob): void;
  /** Resolves once every ending asked for so far has reached Redis (or failed to). */
  settled(): Promise<void>;
}

export function createJobEndings(deps: JobEndingsDeps): JobEndings {
  const { logger, locks } = deps;
  /** Jobs to complete once the sends are quiet. */
  const toComplete: HeldJob[] = [];
  let completing: Promise<void> | undefined;
  /** Hand-backs and failures under way. */
  const moving = new Set<Promise<void>>();

  /** A Job standing for a held one, for BullMQ's transitions: every event job has the same options. */
  const jobOf = (held: HeldJob) => {
    const job = new Job<EventJobData>(
      deps.workerOf(held.shard),
      EVENT_JOB_NAME,
      { eventId: held.eventId },
      EVENT_JOB_OPTIONS,
      held.id,
    );
    job.attemptsMade = held.attemptsMade;
    job.token = held.token;
    return job;
  };

  function track(work: Promise<void>) {
    moving.add(work);
    void work.finally(() => moving.delete(work));
  }

  async function completeWhenQuiet() {
    await deps.bookkeeping.afterSends();
    while (toComplete.length > 0) {
      const batch = toComplete.splice(0, FINISH_BATCH);
      await Promise.all(
        batch.map(async (held) => {
          try {
            await jobOf(held).moveToCompleted(null, held.token, false);
          } catch (error) {
            // Its lock ran out meanwhile (the queue handed it to another worker): nothing to finish.
            logger.debug({ err: error, jobId: held.id }, "could not complete an event job");
          } finally {
            locks.release(held);
          }
        }),
      );
    }
  }

  function scheduleCompletions() {
    if (completing) return;
    completing = completeWhenQuiet().finally(() => {
      completing = undefined;
      // Added while the last batch was finishing.
      if (toComplete.length > 0) scheduleCompletions();
    });
  }

  return {
    complete(held) {
      deps.freeRoom(held);
      toComplete.push(held);
      scheduleCompletions();
    },
    handBack(held, at) {
      deps.freeRoom(held);
      track(
        jobOf(held)
          .moveToDelayed(at, held.token)
          .catch((error: unknown) => logger.warn({ err: error, jobId: held.id }, "could not hand an event job back"))
          .finally(() => locks.release(held)),
      );
    },
    fail(held, error) {
      deps.freeRoom(held);
      logger.error({ err: error, jobId: held.id, attemptsMade: held.attemptsMade }, "event job failed");
      track(
        jobOf(held)
          .moveToFailed(error, held.token, false)
          .then(() => undefined)
          .catch((failure: unknown) => logger.warn({ err: failure, jobId: held.id }, "could not fail an event job"))
          .finally(() => locks.release(held)),
      );
    },
    forget(held) {
      deps.freeRoom(held);
      locks.release(held);
    },
    async settled() {
      while (completing || moving.size > 0) await Promise.all([completing, ...moving]);
    },
  };
}
