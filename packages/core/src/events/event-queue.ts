import type { Queue } from "bullmq";
import { createBatcher } from "../batcher.ts";
import type { Clock } from "../clock.ts";
import type { Config } from "../config.ts";
import { eventShardOf } from "../event-shards.ts";
import {
  connectionGuard,
  EVENT_JOB_NAME,
  EVENT_JOB_OPTIONS,
  type EventJobData,
  eventChangesChannel,
  eventJobId,
} from "../queues.ts";
import type { Redis } from "../redis.ts";

/**
 * The event queue: puts events on the delayed BullMQ queue (one per shard, createEventQueues) and
 * takes them off. Postgres stays the truth: a failure here (Redis down) leaves the event Pending and
 * the reconciler queues it later.
 *
 * Only events due within ENQUEUE_HORIZON_MS get a job: Redis holds the near future, not the
 * backlog. A later event stays in Postgres alone until the reconciler queues it as it comes within
 * the horizon (services/worker/src/maintenance/horizon-feeder.ts).
 */
export interface EventQueue {
  /**
   * Adds (or, when moved, replaces) the delayed job of an event within the horizon; an event moved
   * beyond it loses its job, one created beyond it gets none.
   */
  schedule(event: { id: string; scheduledTime: Date }, options?: { replace?: boolean }): Promise<void>;
  /**
   * Adds the delayed jobs of many events in one round trip (existing ids are left alone); events
   * beyond the horizon are skipped.
   */
  scheduleMany(events: { id: string; scheduledTime: Date }[]): Promise<void>;
  /** Removes the event's job if it is still waiting; a running job finds the event final and stops. */
  unschedule(eventId: string): Promise<void>;
  /**
   * Tells the workers that a Pending event changed (edited, moved or cancelled): one holding its job
   * prepared reads it again. A lost message costs nothing but time: the claim still decides.
   */
  announceChange(eventId: string): Promise<void>;
}

export function createEventQueue(
  /** The event queue, or every shard's in shard order (createEventQueues): an event goes to its shard's. */
  queues: Queue<EventJobData> | readonly Queue<EventJobData>[],
  config: Pick<Config, "PREPARE_AHEAD_MS" | "ENQUEUE_HORIZON_MS" | "QUEUE_PREFIX">,
  clock: Clock,
  /** Whether Redis is reachable now (see `connectionGuard`). */
  isConnected: () => boolean = () => true,
  /** The connection announcements are published on; without it (the reconciler) none are made. */
  announcer?: Pick<Redis, "publish">,
): EventQueue {
  const requireConnection = connectionGuard(isConnected);
  const shards = Array.isArray(queues) ? queues : [queues as Queue<EventJobData>];
  const queueOf = (eventId: string) => shards[eventShardOf(eventId, shards.length)] as Queue<EventJobData>;
  /** Adds jobs, one addBulk per shard they fall in. */
  const addMany = async (jobs: Parameters<Queue<EventJobData>["addBulk"]>[0]) => {
    const byQueue = new Map<Queue<EventJobData>, typeof jobs>();
    for (const job of jobs) {
      const queue = queueOf(job.data.eventId);
      byQueue.set(queue, [...(byQueue.get(queue) ?? []), job]);
    }
    await Promise.all([...byQueue].map(([queue, some]) => queue.addBulk(some)));
  };
  const withinHorizon = (event: { scheduledTime: Date }) =>
    event.scheduledTime.getTime() - clock.now().getTime() <= config.ENQUEUE_HORIZON_MS;
  const jobFor = (event: { id: string; scheduledTime: Date }) => ({
    name: EVENT_JOB_NAME,
    data: { eventId: event.id },
    opts: {
      jobId: eventJobId(event.id),
      // Handed to a worker PREPARE_AHEAD_MS early: it holds the job until the claim, just before the
      // instant, so a burst is loaded from Redis well before it is due.
      delay: Math.max(0, event.scheduledTime.getTime() - config.PREPARE_AHEAD_MS - clock.now().getTime()),
      ...EVENT_JOB_OPTIONS,
    },
  });
  type Job = ReturnType<typeof jobFor>;
  // The adds of one turn of the event loop go to Redis together: one addBulk (one round trip)
  // instead of one add each. A failed addBulk fails each of its adds, as their own adds would.
  const adds = createBatcher(async (jobs: Job[]): Promise<undefined[]> => {
    if (jobs.length === 1) {
      const [job] = jobs as [Job];
      await queueOf(job.data.eventId).add(job.name, job.data, job.opts);
    } else {
      await addMany(jobs);
    }
    return jobs.map(() => undefined);
  });
  return {
    async schedule(event, options = {}) {
      requireConnection();
      if (!withinHorizon(event)) {
        // Moved out beyond the horizon: the job it had goes (a held one stays, as below, and its
        // worker sends it back to the queue for the new time).
        if (options.replace) await queueOf(event.id).remove(eventJobId(event.id));
        return;
      }
      if (options.replace) {
        // A job a worker already holds (prepared) is locked and stays: the worker hears of the
        // change (announceChange) and re-reads the event; the add below then finds the id taken.
        await queueOf(event.id).remove(eventJobId(event.id));
        const job = jobFor(event);
        await queueOf(event.id).add(job.name, job.data, job.opts);
        return;
      }
      await adds.run(jobFor(event));
    },
    async scheduleMany(events) {
      requireConnection();
      const near = events.filter(withinHorizon);
      if (near.length > 0) await addMany(near.map(jobFor));
    },
    async unschedule(eventId) {
      requireConnection();
      await queueOf(eventId).remove(eventJobId(eventId));
    },
    async announceChange(eventId) {
      if (!announcer) return;
      requireConnection();
      await announcer.publish(eventChangesChannel(config.QUEUE_PREFIX), eventId);
    },
  };
}
