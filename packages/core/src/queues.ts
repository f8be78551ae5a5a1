/**
 * Queue names and job shapes shared by the API (producer) and the worker (consumer).
 * A job carries only ids: the worker reads the record from Postgres when it runs.
 */
export const QUEUE_NAMES = {
  /** Delayed jobs, one per event, due at the event's time. */
  events: "events",
  /** Job schedulers, one per active cron job; each firing is one job. */
  cron: "cron",
  /** Repeatable maintenance: reconciler, retention, failure notices. */
  maintenance: "maintenance",
} as const;

export type QueueName = (typeof QUEUE_NAMES)[keyof typeof QUEUE_NAMES];

export interface EventJobData {
  eventId: string;
}

export interface CronJobData {
  cronJobId: string;
  /**
   * The run's scheduled time (ms) when the reconciler re-drives a run whose firing job was lost;
   * a scheduler's own firings carry it in the job options instead.
   */
  scheduledFor?: number;
}

/** Names of the repeatable maintenance jobs (each one job scheduler on the maintenance queue). */
export const MAINTENANCE_JOBS = {
  reconcile: "reconcile",
  /** Daily: deletes history and final events past their windows (contract §8). */
  retention: "retention",
  /** Hourly, only when SMTP_URL is set: one e-mail per organization listing new failures. */
  failureNotices: "failure-notices",
} as const;

/**
 * BullMQ's own retries of a delivery job (an event's or a cron run's). Delivery retries are not
 * BullMQ attempts: the worker re-delays the same job on a failed delivery (numbered in Postgres).
 * These only cover infrastructure failures (Postgres unreachable while recording, say).
 */
export const INFRASTRUCTURE_RETRIES = { attempts: 8, backoff: { type: "exponential", delay: 1_000 } } as const;

/** Completed and failed jobs kept for inspection in Bull Board; Postgres keeps the real history. */
export const KEEP_FINISHED_JOBS = { removeOnComplete: { count: 1_000 }, removeOnFail: { count: 5_000 } } as const;

/** The name of every event's delivery job. */
export const EVENT_JOB_NAME = "deliver-event";
/**
 * The options of every event's job besides its id and delay: a worker finishes the jobs it holds
 * by id alone (without keeping the fetched job), with these options.
 */
export const EVENT_JOB_OPTIONS = { ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS } as const;

/**
 * A check to run before a queue command. BullMQ waits for a connection before any command, so
 * without it a request would wait for its timeout while Redis is down instead of failing at once.
 */
export function connectionGuard(isConnected: () => boolean): () => void {
  return () => {
    if (!isConnected()) throw new Error("Redis is not connected");
  };
}

/**
 * The Redis pub/sub channel on which the API announces that a Pending event was edited, moved or
 * cancelled (the message is the event id). A worker holding the event's job prepared ahead of its
 * time reads the event again, so an edit always wins over its prepared copy (contract §6).
 */
export const eventChangesChannel = (queuePrefix: string) => `${queuePrefix}:event-changes`;

// BullMQ 6 refuses custom job ids containing ":" (it reserves that form for its own repeat keys),
// so deterministic ids use "-".
export const eventJobId = (eventId: string) => `event-${eventId}`;
export const cronSchedulerId = (cronJobId: string) => `cron-${cronJobId}`;
/** The cron job of a scheduler id made by `cronSchedulerId`, or undefined for any other id. */
export const cronJobIdOfScheduler = (schedulerId: string) =>
  schedulerId.startsWith("cron-") ? schedulerId.slice("cron-".length) : undefined;
/** The id of the job that re-drives a cron run whose firing job was lost. */
export const cronRunRedriveJobId = (runId: string) => `run-${runId}`;
