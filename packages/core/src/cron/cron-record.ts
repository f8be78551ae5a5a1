import type { CronJobStatus, CronRunStatus, NextExecutionStatus } from "../statuses.ts";
import { nextCronRun } from "./expression.ts";

/** A cron job as stored, with whether one of its runs is being delivered now. */
export interface CronJobRecord {
  id: string;
  orgId: string;
  expression: string;
  timezone: string;
  destination: string;
  payload: string;
  status: CronJobStatus;
  createdAt: Date;
  updatedAt: Date;
  /** True while a run of this job is Queued (being delivered or retried). */
  running: boolean;
  /** The flow its runs are made in (contract §10.2), or null: none. */
  flowKey: string | null;
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
  expression: string;
  /** Absent while Disabled (contract §4). */
  nextExecutionDate?: string;
  destination: string;
  org: string;
  payload: string;
  timezone: string;
  /** Always present: null when the job's runs are in no flow (contract §10.2). */
  flowKey: string | null;
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
 * The contract's cron job shape. `nextExecutionDate` is the expression's next match after `now`;
 * `nextExecutionStatus` is `Queued` while a run is being delivered. A Disabled job has no next
 * execution: its status says `Disabled` and its date is absent, as contract §4 has it (a run still
 * being delivered shows in its history).
 */
export function toCronJobView(job: CronJobRecord, now: Date, history?: CronRunRecord[]): CronJobView {
  const next = job.status === "Active" ? nextCronRun(job.expression, job.timezone, now) : undefined;
  return {
    id: job.id,
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    status: job.status,
    nextExecutionStatus: job.status === "Disabled" ? "Disabled" : job.running ? "Queued" : "Pending",
    expression: job.expression,
    ...(next ? { nextExecutionDate: next.toISOString() } : {}),
    destination: job.destination,
    org: job.orgId,
    payload: job.payload,
    timezone: job.timezone,
    flowKey: job.flowKey,
    ...(history ? { history: history.map(toCronRunView) } : {}),
  };
}
