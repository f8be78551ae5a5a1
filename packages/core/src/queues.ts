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
}

// BullMQ 6 refuses custom job ids containing ":" (it reserves that form for its own repeat keys),
// so deterministic ids use "-".
export const eventJobId = (eventId: string) => `event-${eventId}`;
export const cronSchedulerId = (cronJobId: string) => `cron-${cronJobId}`;
