import { type Db, type DbTransaction, Prisma } from "@punctual/db";
import { type DeliveryPolicy, mergeWithDefault } from "../delivery-policy/policy.ts";
import { rawPayloadProblem } from "../delivery-policy/policy-schema.ts";
import { AppError, badRequest, forbidden, notFound } from "../errors.ts";
import { type Labels, labelsColumn, labelsFromColumn } from "../events/labels.ts";
import { newId } from "../ids.ts";
import {
  applyPolicyEdit,
  type DeliveryPolicyEdit,
  policyColumn,
  policyFromColumn,
} from "../organizations/stored-delivery-policy.ts";
import type { CatchUpPolicy, CronJobStatus, OverlapPolicy } from "../statuses.ts";
import type { CronJobRecord } from "./cron-record.ts";
import {
  applyTimingEdit,
  type CronJobTimingEdit,
  firingTimesDiffer,
  hasTimingEdit,
  timingProblem,
} from "./schedule-rules.ts";

// The module that writes cron jobs (contract §4, §6): Active ⇄ Disabled by a client's edit; a job is
// deleted with its history. Its runs are written in cron-runs.ts. A Completed job (its maxRuns ran,
// or its endAt passed: contract §10.4) is final: an edit is refused, and it no longer counts toward
// the organization's limit.
//
// A cron job stores only its own delivery policy fields (contract §10.1): its organization's
// default is merged into each run when the run is created, so a change of the default reaches the
// runs after it. What is read here carries both, for answers that show the effective policy.

export const CRON_JOB_NOT_FOUND = "Unable to find cron job";
/** The refusal of an edit of a Completed job (409): Completed is final (contract §10.4). */
export const CRON_JOB_COMPLETED = "A Completed cron job cannot be edited";

/** How far back `catchUp: all` looks when the job does not say (contract §10.4). */
export const DEFAULT_CATCH_UP_WINDOW_MS = 3_600_000;

const cronJobLimitReached = (limit: number) => forbidden(`Cron job limit of ${limit} reached for this organization`);

interface CronJobRow {
  id: string;
  org_id: string;
  expression: string | null;
  timezone: string;
  every: string | null;
  every_ms: bigint | null;
  start_at: Date | null;
  end_at: Date | null;
  max_runs: number | null;
  catch_up: string;
  catch_up_window_ms: number;
  overlap: string;
  jitter_ms: number;
  schedule_since: Date;
  destination: string;
  payload: string;
  status: string;
  created_at: Date;
  updated_at: Date;
  running: boolean;
  delivery_policy: unknown;
  org_delivery_policy: unknown;
  flow_key: string | null;
  callback_url: string | null;
  labels: unknown;
}

/** A cron job with its own delivery policy and its organization's current default. */
export interface CronJobWithPolicy extends CronJobRecord {
  /** The job's own policy fields, header values as given; null when it has none. */
  deliveryPolicy: DeliveryPolicy | null;
  /** Its organization's default policy now; null when there is none. */
  organizationPolicy: DeliveryPolicy | null;
}

const CRON_JOB_COLUMNS = Prisma.sql`j.id, j.org_id, j.expression, j.timezone, j.destination, j.payload, j.status,
  j.created_at, j.updated_at, j.every, j.every_ms, j.start_at, j.end_at, j.max_runs, j.catch_up,
  j.catch_up_window_ms, j.overlap, j.jitter_ms, COALESCE(j.schedule_since, j.created_at) AS schedule_since,
  EXISTS (SELECT 1 FROM cron_runs r WHERE r.cron_job_id = j.id AND r.status = 'Queued') AS running,
  j.delivery_policy,
  (SELECT o.delivery_policy FROM organizations o WHERE o.id = j.org_id) AS org_delivery_policy,
  j.flow_key, j.callback_url, j.labels`;

const cronJobFromRow = (row: CronJobRow): CronJobWithPolicy => ({
  id: row.id,
  orgId: row.org_id,
  expression: row.expression,
  timezone: row.timezone,
  every: row.every,
  everyMs: row.every_ms === null ? null : Number(row.every_ms),
  startAt: row.start_at,
  endAt: row.end_at,
  maxRuns: row.max_runs,
  catchUp: row.catch_up as CatchUpPolicy,
  catchUpWindowMs: row.catch_up_window_ms,
  overlap: row.overlap as OverlapPolicy,
  jitterMs: row.jitter_ms,
  scheduleSince: row.schedule_since,
  destination: row.destination,
  payload: row.payload,
  status: row.status as CronJobStatus,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  running: row.running,
  flowKey: row.flow_key,
  callbackUrl: row.callback_url,
  labels: labelsFromColumn(row.labels),
  deliveryPolicy: policyFromColumn(row.delivery_policy),
  organizationPolicy: policyFromColumn(row.org_delivery_policy),
});

/** A cron job's timing (contract §10.4), validated by the caller: exactly one of expression and every. */
export interface CronJobTiming {
  expression: string | null;
  timezone: string;
  /** The interval as given, with its length (parseEvery). */
  every: { text: string; ms: number } | null;
  startAt: Date | null;
  endAt: Date | null;
  maxRuns: number | null;
  catchUp: CatchUpPolicy;
  catchUpWindowMs: number;
  overlap: OverlapPolicy;
  jitterMs: number;
}

/** A new job; timing fields left out take their defaults (no window, no limit, skip, allow, no jitter). */
interface NewCronJob extends Partial<Omit<CronJobTiming, "expression" | "timezone">> {
  orgId: string;
  expression: string | null;
  timezone: string;
  destination: string;
  payload: string;
  /** The request's own delivery policy fields; stored as they are (NULL when none). */
  deliveryPolicy?: DeliveryPolicy | undefined;
  /** The flow of its runs (contract §10.2); none when absent. */
  flowKey?: string | undefined;
  /** Told of each run's final outcome (outcomes/notices.ts); none when absent. */
  callbackUrl?: string | undefined;
  /** Its labels (contract §10.5); none when absent or empty. */
  labels?: Labels | undefined;
}

/** Refuses a payload its runs could not send as their raw body says (contract §10.1). */
function checkRawPayload(payload: string, own: DeliveryPolicy | null, organizationPolicy: DeliveryPolicy | null) {
  const problem = rawPayloadProblem(payload, mergeWithDefault(own, organizationPolicy));
  if (problem !== undefined) throw badRequest(problem);
}

async function findInTransaction(tx: DbTransaction, orgId: string, cronJobId: string, lock: boolean) {
  const [row] = await tx.$queryRaw<CronJobRow[]>`
    SELECT ${CRON_JOB_COLUMNS} FROM cron_jobs j WHERE j.id = ${cronJobId} AND j.org_id = ${orgId}
    ${lock ? Prisma.sql`FOR UPDATE OF j` : Prisma.empty}`;
  return row ? cronJobFromRow(row) : undefined;
}

/**
 * Creates an Active cron job. The per-organization limit is counted under a lock on the
 * organization's row, so concurrent creates cannot pass it; the raw-body rule is judged with the
 * organization's default read under the same lock.
 */
export async function createCronJob(db: Db, input: NewCronJob, now: Date, limit: number): Promise<CronJobWithPolicy> {
  return db.$transaction(async (tx) => {
    const [organization] = await tx.$queryRaw<{ delivery_policy: unknown }[]>`
      SELECT delivery_policy FROM organizations WHERE id = ${input.orgId} FOR UPDATE`;
    const own = policyFromColumn(input.deliveryPolicy ?? null);
    checkRawPayload(input.payload, own, policyFromColumn(organization?.delivery_policy));
    // Completed jobs are final and no longer count (contract §10.4); Disabled ones still do.
    const count = await tx.cronJob.count({ where: { orgId: input.orgId, status: { not: "Completed" } } });
    if (count >= limit) throw cronJobLimitReached(limit);
    const id = newId("cron");
    await tx.$executeRaw`
      INSERT INTO cron_jobs (id, org_id, expression, timezone, destination, payload, status, created_at, updated_at,
        delivery_policy, flow_key, every, every_ms, start_at, end_at, max_runs, catch_up, catch_up_window_ms, overlap,
        jitter_ms, schedule_since, callback_url, labels)
      VALUES (${id}, ${input.orgId}, ${input.expression}, ${input.timezone}, ${input.destination}, ${input.payload},
        'Active', ${now}, ${now}, ${policyColumn(own)}::jsonb, ${input.flowKey ?? null}, ${input.every?.text ?? null},
        ${input.every?.ms ?? null}, ${input.startAt ?? null}, ${input.endAt ?? null}, ${input.maxRuns ?? null},
        ${input.catchUp ?? "skip"}, ${input.catchUpWindowMs ?? DEFAULT_CATCH_UP_WINDOW_MS}, ${input.overlap ?? "allow"},
        ${input.jitterMs ?? 0}, ${now}, ${input.callbackUrl ?? null}, ${labelsColumn(input.labels)}::jsonb)`;
    const job = await findInTransaction(tx, input.orgId, id, false);
    if (!job) throw new Error(`cron job ${id} vanished in its own transaction`);
    return job;
  });
}

/** One cron job of an organization, or undefined. */
export async function findCronJob(db: Db, orgId: string, cronJobId: string): Promise<CronJobWithPolicy | undefined> {
  // An id with NUL names no job, and Postgres would refuse the text outright.
  if (cronJobId.includes("\u0000")) return undefined;
  const [row] = await db.$queryRaw<CronJobRow[]>`
    SELECT ${CRON_JOB_COLUMNS} FROM cron_jobs j WHERE j.id = ${cronJobId} AND j.org_id = ${orgId}`;
  return row ? cronJobFromRow(row) : undefined;
}

/** Every cron job of an organization, oldest first. */
export async function listCronJobs(db: Db, orgId: string): Promise<CronJobWithPolicy[]> {
  const rows = await db.$queryRaw<CronJobRow[]>`
    SELECT ${CRON_JOB_COLUMNS} FROM cron_jobs j WHERE j.org_id = ${orgId} ORDER BY j.created_at, j.id`;
  return rows.map(cronJobFromRow);
}

interface CronJobChanges {
  payload?: string | undefined;
  destination?: string | undefined;
  /**
   * The timing fields the request gives (each checked on its own, and not both an expression and an
   * interval): merged into the job's under its lock, the result judged as a whole.
   */
  timing?: CronJobTimingEdit | undefined;
  status?: CronJobStatus | undefined;
  /** Policy fields: a field given replaces the job's own, null removes it (`applyPolicyEdit`). */
  deliveryPolicy?: DeliveryPolicyEdit | undefined;
  /** A new flow key for its next runs; null takes them out of any flow; undefined keeps it. */
  flowKey?: string | null | undefined;
  /** A new callback URL for the outcomes of its runs from now on; null removes it; undefined keeps it. */
  callbackUrl?: string | null | undefined;
  /** New labels, replacing all of them; null (or `{}`) removes them; undefined keeps them. */
  labels?: Labels | null | undefined;
}

/**
 * Applies a client's edit in one transaction, the job's row locked: an edit of a Completed job (409),
 * one whose merged timing is refused (`timingProblem`, judged when the edit gives a timing field or
 * enables the job) or one refused by the raw-body rule (judged on the effective payload and policy,
 * the organization's default included) changes nothing. A change of the firing times, or enabling
 * the job, sets its schedule again from `now` (`schedule_since`). Returns the job before and after,
 * so the caller can reschedule.
 */
export async function updateCronJob(
  db: Db,
  orgId: string,
  cronJobId: string,
  changes: CronJobChanges,
  now: Date,
): Promise<{ before: CronJobWithPolicy; after: CronJobWithPolicy }> {
  if (cronJobId.includes("\u0000")) throw notFound(CRON_JOB_NOT_FOUND);
  return db.$transaction(async (tx) => {
    const before = await findInTransaction(tx, orgId, cronJobId, true);
    if (!before) throw notFound(CRON_JOB_NOT_FOUND);
    if (before.status === "Completed") throw new AppError("CONFLICT", CRON_JOB_COMPLETED);
    const payload = changes.payload ?? before.payload;
    const own = applyPolicyEdit(before.deliveryPolicy, changes.deliveryPolicy);
    const timing = applyTimingEdit(timingOf(before), changes.timing ?? {});
    const status = changes.status ?? before.status;
    const enabled = status === "Active" && before.status !== "Active";
    const scheduleChanged = enabled || firingTimesDiffer(timingOf(before), timing);
    const scheduleSince = scheduleChanged ? now : before.scheduleSince;
    if (enabled || (changes.timing !== undefined && hasTimingEdit(changes.timing))) {
      const problem = timingProblem(timing, now, scheduleSince);
      if (problem) throw badRequest(problem.message);
    }
    checkRawPayload(payload, own, before.organizationPolicy);
    await tx.$executeRaw`
      UPDATE cron_jobs SET
        payload = ${payload},
        destination = ${changes.destination ?? before.destination},
        expression = ${timing.expression},
        timezone = ${timing.timezone},
        every = ${timing.every?.text ?? null},
        every_ms = ${timing.every?.ms ?? null},
        start_at = ${timing.startAt},
        end_at = ${timing.endAt},
        max_runs = ${timing.maxRuns},
        catch_up = ${timing.catchUp},
        catch_up_window_ms = ${timing.catchUpWindowMs},
        overlap = ${timing.overlap},
        jitter_ms = ${timing.jitterMs},
        status = ${status},
        -- New firing times, or a job enabled again, start counting its firings (and its catch-up) now.
        schedule_since = ${scheduleSince},
        delivery_policy = ${policyColumn(own)}::jsonb,
        flow_key = ${changes.flowKey === undefined ? before.flowKey : changes.flowKey},
        callback_url = ${changes.callbackUrl === undefined ? before.callbackUrl : changes.callbackUrl},
        labels = ${labelsColumn(changes.labels === undefined ? before.labels : changes.labels)}::jsonb,
        updated_at = ${now}
      WHERE id = ${cronJobId} AND org_id = ${orgId}`;
    const after = await findInTransaction(tx, orgId, cronJobId, false);
    if (!after) throw notFound(CRON_JOB_NOT_FOUND);
    return { before, after };
  });
}

/** A job's timing as stored (the base an edit is merged into). */
export function timingOf(job: CronJobRecord): CronJobTiming {
  return {
    expression: job.expression,
    timezone: job.timezone,
    every: job.every === null || job.everyMs === null ? null : { text: job.every, ms: job.everyMs },
    startAt: job.startAt,
    endAt: job.endAt,
    maxRuns: job.maxRuns,
    catchUp: job.catchUp,
    catchUpWindowMs: job.catchUpWindowMs,
    overlap: job.overlap,
    jitterMs: job.jitterMs,
  };
}

/** Deletes a cron job and its history; it no longer counts toward the limit. */
export async function deleteCronJob(db: Db, orgId: string, cronJobId: string): Promise<void> {
  if (cronJobId.includes("\u0000")) throw notFound(CRON_JOB_NOT_FOUND);
  const deleted = await db.cronJob.deleteMany({ where: { id: cronJobId, orgId } });
  if (deleted.count === 0) throw notFound(CRON_JOB_NOT_FOUND);
}
