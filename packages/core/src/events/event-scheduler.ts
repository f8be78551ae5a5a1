import type { Queue } from "bullmq";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { type EventJobData, eventJobId } from "../queues.ts";

/** Name of the job that delivers one event. */
export const DELIVER_EVENT_JOB = "deliver-event";

/** Completed and failed jobs kept for inspection in Bull Board; Postgres keeps the real history. */
const KEEP_COMPLETED = { count: 1_000 };
const KEEP_FAILED = { count: 5_000 };
const INFRASTRUCTURE_ATTEMPTS = 8;

/**
 * Puts events on the delayed queue and takes them off. Postgres stays the truth: a failure here
 * (Redis down) leaves the event Pending and the reconciler queues it later.
 */
export interface EventScheduler {
  /** Adds (or, when moved, replaces) the delayed job of an event. */
  schedule(event: { id: string; scheduledTime: Date }, options?: { replace?: boolean }): Promise<void>;
  /** Removes the event's job if it is still waiting; a running job finds the event final and stops. */
  unschedule(eventId: string): Promise<void>;
}

export function createEventScheduler(
  queue: Queue<EventJobData>,
  config: Pick<Config, "CLAIM_LEAD_MS">,
  clock: Clock,
  /**
   * Whether Redis is reachable now. BullMQ waits for a connection before any command, so without
   * this check a request would wait for its timeout while Redis is down instead of failing at once.
   */
  isConnected: () => boolean = () => true,
): EventScheduler {
  const requireConnection = () => {
    if (!isConnected()) throw new Error("Redis is not connected");
  };
  return {
    async schedule(event, options = {}) {
      requireConnection();
      const jobId = eventJobId(event.id);
      if (options.replace) await queue.remove(jobId);
      const delay = Math.max(0, event.scheduledTime.getTime() - config.CLAIM_LEAD_MS - clock.now().getTime());
      await queue.add(
        DELIVER_EVENT_JOB,
        { eventId: event.id },
        {
          jobId,
          delay,
          // Delivery retries are not BullMQ attempts: the worker re-delays the same job on a failed
          // delivery (numbered in Postgres). These attempts only cover infrastructure failures
          // (e.g. Postgres unreachable while recording), retried with backoff.
          attempts: INFRASTRUCTURE_ATTEMPTS,
          backoff: { type: "exponential", delay: 1_000 },
          removeOnComplete: KEEP_COMPLETED,
          removeOnFail: KEEP_FAILED,
        },
      );
    },
    async unschedule(eventId) {
      requireConnection();
      await queue.remove(eventJobId(eventId));
    },
  };
}
