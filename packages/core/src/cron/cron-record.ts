import type { Labels } from "../events/labels.ts";
import type { CatchUpPolicy, CronJobStatus, CronRunStatus, NextExecutionStatus, OverlapPolicy } from "../statuses.ts";
import { nextFiring, scheduleOf } from "./schedule.ts";

/** A cron job as stored, with whether one of its runs is being delivered now. */
export interface CronJobRecord {
  id: string;
  orgId: string;
  /** Five or six fields; null when the job fires `every` an interval. */
  expression: string | null;
  timezone: string;
  /** The interval as given (ISO 8601), and its length in ms; null with an expression (contract §10.4). */
  every: string | null;
  everyMs: number | null;
  startAt: Date | null;
  endAt: Date | null;
  maxRuns: number | null;
  catchUp: CatchUpPolicy;
  catchUpWindowMs: number;
  overlap: OverlapPolicy;
  jitterMs: number;
  /** When its timing was last set (created, edited, enabled): firings before it are never caught up. */
  scheduleSince: Date;
  destination: string;
  payload: string;
  status: CronJobStatus;
  createdAt: Date;
  updatedAt: Date;
  /** True while a run of this job is Queued (being delivered or retried). */
  running: boolean;
  /** The flow its runs are made in (contract §10.2), or null: none. */
  flowKey: string | null;
  /** Told of each run's final outcome (outcomes/notices.ts), or null: none. */
  callbackUrl: string | null;
  /** Its labels (contract §10.5); `{}` for none. */
  labels: Labels;
}

/** One firing of a cron job (its history element). */
export interface CronRunRecord {
  id: string;
  cronJobId: string;
  cron: string;
  scheduledFor: Date;
  status: CronRunStatus;
  attempts: number;
  responseStatus: number | null;
  responseData: string | null;
  requestData: string;
  error: string | null;
  durationMs: number | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Contract §4's history element; keeps the `@jiter/node` SDK's `CronJobHistory` fields. */
interface CronRunView {
  id: string;
  cron: string;
  scheduledFor: string;
  status: CronRunStatus;
  attempts: number;
  responseStatus: number | null;
  responseData: string | null;
  requestData: string;
  error: string | null;
  durationMs: number | null;
  createdAt: string;
  updatedAt: string;
}

export interface CronJobView {
  id: string;
  createdAt: string;
  updatedAt: string;
  status: CronJobStatus;
  nextExecutionStatus: NextExecutionStatus;
  /** Null when the job fires `every` an interval (contract §10.4). */
  expression: string | null;
  /** Absent while Disabled (contract §4), once Completed, and when the schedule fires no more. */
  nextExecutionDate?: string;
  every: string | null;
  startAt: string | null;
  endAt: string | null;
  maxRuns: number | null;
  catchUp: CatchUpPolicy;
  catchUpWindowMs: number;
  overlap: OverlapPolicy;
  jitterMs: number;
  destination: string;
  org: string;
  payload: string;
  timezone: string;
  /** Always present: null when the job's runs are in no flow (contract §10.2). */
  flowKey: string | null;
  /** Always present: null when no callback is told of its runs' outcomes. */
  callbackUrl: string | null;
  /** Always present: `{}` when the job has none (contract §10.5). */
  labels: Labels;
  history?: CronRunView[];
}

function toCronRunView(run: CronRunRecord): CronRunView {
  return {
    id: run.id,
    cron: run.cron,
    scheduledFor: run.scheduledFor.toISOString(),
    status: run.status,
    attempts: run.attempts,
    responseStatus: run.responseStatus,
    responseData: run.responseData,
    requestData: run.requestData,
    error: run.error,
    durationMs: run.durationMs,
    createdAt: run.createdAt.toISOString(),
    updatedAt: run.updatedAt.toISOString(),
  };
}

/**
 * The contract's cron job shape. `nextExecutionDate` is the schedule's next firing after `now`
 * (nextFiring, the scheduler's own rule); `nextExecutionStatus` is `Queued` while a run is being
 * delivered. A Disabled job has no next execution: its status says `Disabled` and its date is absent,
 * as contract §4 has it (a run still being delivered shows in its history); a Completed one likewise.
 */
export function toCronJobView(job: CronJobRecord, now: Date, history?: CronRunRecord[]): CronJobView {
  const next = job.status === "Active" ? nextFiring(scheduleOf(job), now.getTime()) : undefined;
  return {
    id: job.id,
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    status: job.status,
    nextExecutionStatus: job.status !== "Active" ? job.status : job.running ? "Queued" : "Pending",
    expression: job.expression,
    ...(next !== undefined ? { nextExecutionDate: new Date(next).toISOString() } : {}),
    destination: job.destination,
    org: job.orgId,
    payload: job.payload,
    timezone: job.timezone,
    every: job.every,
    startAt: job.startAt?.toISOString() ?? null,
    endAt: job.endAt?.toISOString() ?? null,
    maxRuns: job.maxRuns,
    catchUp: job.catchUp,
    catchUpWindowMs: job.catchUpWindowMs,
    overlap: job.overlap,
    jitterMs: job.jitterMs,
    flowKey: job.flowKey,
    callbackUrl: job.callbackUrl,
    labels: job.labels,
    ...(history ? { history: history.map(toCronRunView) } : {}),
  };
}
