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

/** Completed: its maxRuns ran or its endAt passed (contract §10.4); final, it no longer counts toward the limit. */
export const CRON_JOB_STATUSES = ["Active", "Disabled", "Completed"] as const;
export type CronJobStatus = (typeof CRON_JOB_STATUSES)[number];

export const NEXT_EXECUTION_STATUSES = ["Pending", "Queued", "Disabled", "Completed"] as const;
export type NextExecutionStatus = (typeof NEXT_EXECUTION_STATUSES)[number];

/** Skipped: a firing while the previous run was undecided, with `overlap: skip` (contract §10.4); never sent. */
export const CRON_RUN_STATUSES = ["Queued", "Sent", "Failed To Send", "Skipped"] as const;
export type CronRunStatus = (typeof CRON_RUN_STATUSES)[number];

/** What happens to firings missed while no worker ran (contract §10.4). */
export const CATCH_UP_POLICIES = ["skip", "latest", "all"] as const;
export type CatchUpPolicy = (typeof CATCH_UP_POLICIES)[number];

/** What happens to a firing while the job's previous run is undecided (contract §10.4). */
export const OVERLAP_POLICIES = ["allow", "skip", "buffer"] as const;
export type OverlapPolicy = (typeof OVERLAP_POLICIES)[number];

export function isEventStatus(value: string): value is EventStatus {
  return (EVENT_STATUSES as readonly string[]).includes(value);
}
