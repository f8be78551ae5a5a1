// An event's `status` is written only in packages/core/src/events (contract §6), each change one
// conditional statement or one short transaction:
//
//   Pending                                        (client: event-creator.ts; replays: replay.ts)
//   Pending → Queued → Sent | Failed To Send      (worker: event-claims.ts, attempt-records.ts)
//   Pending → Cancelled                            (client: event-edits.ts)
//   Pending → Failed To Queue                      (reconciler: event-claims.ts)
//
// Replays only insert new Pending events beside their originals.

/** Event statuses exactly as the contract spells them (§6). */
export const EVENT_STATUSES = ["Pending", "Cancelled", "Queued", "Sent", "Failed To Send", "Failed To Queue"] as const;
export type EventStatus = (typeof EVENT_STATUSES)[number];

export const CRON_JOB_STATUSES = ["Active", "Disabled"] as const;
export type CronJobStatus = (typeof CRON_JOB_STATUSES)[number];

export const NEXT_EXECUTION_STATUSES = ["Pending", "Queued", "Disabled"] as const;
export type NextExecutionStatus = (typeof NEXT_EXECUTION_STATUSES)[number];

export const CRON_RUN_STATUSES = ["Queued", "Sent", "Failed To Send"] as const;
export type CronRunStatus = (typeof CRON_RUN_STATUSES)[number];

export function isEventStatus(value: string): value is EventStatus {
  return (EVENT_STATUSES as readonly string[]).includes(value);
}
