import type { Config, EventJobData, Logger } from "@punctual/core";
import type { Worker } from "bullmq";
import type { HeldJob } from "./event-job-feed.ts";

// The BullMQ locks of the event jobs a worker holds, kept apart from the fetching as BullMQ keeps
// its lock manager apart from its worker. A held job's lock is renewed until the job is released
// (finished, or found lost); a worker that dies stops renewing, and its jobs go to another worker
// once their locks run out (BullMQ's stalled check), as with BullMQ's own loop.
//
// The locks of all held jobs (tens of thousands before a large burst) are renewed in a few
// commands of RENEW_BATCH ids, and only those renewed longest ago: once RENEW_AFTER of a lock has
// gone by, or, while a burst's attempts wait for a send slot, once RENEW_DURING_BURST_AFTER has
// (the lock still has seconds left), so renewals wait for the burst.

/** Lock renewals carry up to this many jobs each; a large prepared set renews in a few commands. */
const RENEW_BATCH = 1_000;
const RENEW_AFTER = 1 / 3;
const RENEW_DURING_BURST_AFTER = 0.55;
/** The locks are looked at this many times a lock (at most every 100 ms). */
const CHECKS_PER_LOCK = 6;

export interface JobLocksDeps {
  config: Pick<Config, "JOB_LOCK_MS">;
  logger: Logger;
  /** Whether attempts wait for a send slot (a burst is being sent). */
  busy: () => boolean;
}

export interface JobLocks {
  /**
   * Starts renewing the locks of the jobs held from `workers` (one per consumed shard, by index);
   * `lost` gets the held jobs whose locks could not be renewed, released from then on.
   */
  start(workers: readonly Worker<EventJobData>[], lost: (jobs: HeldJob[]) => void): void;
  /** Renews `job`'s lock from now on. */
  hold(job: HeldJob): void;
  /** No longer renews `job`'s lock: it is not this worker's in the queue any more. */
  release(job: HeldJob): void;
  /** Stops renewing; resolves once a renewal under way has ended. */
  stop(): Promise<void>;
}

export function createJobLocks(deps: JobLocksDeps): JobLocks {
  const { config, logger } = deps;
  let workers: readonly Worker<EventJobData>[] = [];
  /** Held jobs by id, one map per shard. */
  let heldByShard: Map<string, HeldJob>[] = [];
  let timer: NodeJS.Timeout | undefined;
  let renewing: Promise<void> | undefined;

  const release = (job: HeldJob) => {
    const held = heldByShard[job.shard];
    if (held?.get(job.id) === job) held.delete(job.id);
  };

  /** Renews the locks of jobs renewed longer than RENEW_AFTER of a lock ago, a batch at a time. */
  async function renew(lost: (jobs: HeldJob[]) => void) {
    const now = Date.now();
    const after = config.JOB_LOCK_MS * (deps.busy() ? RENEW_DURING_BURST_AFTER : RENEW_AFTER);
    for (const [shard, held] of heldByShard.entries()) {
      const worker = workers[shard] as Worker<EventJobData>;
      const due = [...held.values()].filter((job) => now - job.lockedAt >= after);
      for (let start = 0; start < due.length; start += RENEW_BATCH) {
        const batch = due.slice(start, start + RENEW_BATCH);
        for (const job of batch) job.lockedAt = now;
        let failed: string[];
        try {
          failed = await worker.extendJobLocks(
            batch.map((job) => job.id),
            batch.map((job) => job.token),
            config.JOB_LOCK_MS,
          );
        } catch (error) {
          logger.warn({ err: error }, "could not renew the locks of held event jobs");
          continue;
        }
        if (failed.length === 0) continue;
        const failedIds = new Set(failed);
        const lostJobs = batch.filter((job) => failedIds.has(job.id) && held.get(job.id) === job);
        for (const job of lostJobs) release(job);
        if (lostJobs.length > 0) lost(lostJobs);
      }
    }
  }

  return {
    start(consumers, lost) {
      workers = consumers;
      heldByShard = consumers.map(() => new Map());
      timer = setInterval(
        () => {
          renewing ??= renew(lost).finally(() => {
            renewing = undefined;
          });
        },
        Math.max(100, Math.floor(config.JOB_LOCK_MS / CHECKS_PER_LOCK)),
      );
    },
    hold(job) {
      heldByShard[job.shard]?.set(job.id, job);
    },
    release,
    async stop() {
      clearInterval(timer);
      await renewing;
    },
  };
}
