import { type Db, Prisma } from "@punctual/db";
import type { DeliveryOwner } from "../delivery-owner.ts";
import type { DeliveryPolicy } from "../delivery-policy/policy.ts";
import { newId } from "../ids.ts";
import { PREVIOUS_SECRET_WHILE_VALID } from "../organizations/previous-secret.ts";
import type { CronRunStatus } from "../statuses.ts";
import type { CronRunRecord } from "./cron-record.ts";

// The only module that writes cron runs' statuses (contract §4, §6): Queued (created by a firing)
// → Sent | Failed To Send. A firing creates its run with INSERT … ON CONFLICT DO NOTHING on (cron
// job, scheduled time), so a duplicate firing of the same time finds the run instead of delivering
// it again.

interface CronRunRow {
  id: string;
  cron_job_id: string;
  cron: string;
  scheduled_for: Date;
  status: string;
  attempts: number;
  response_status: number | null;
  response_data: string | null;
  request_data: string;
  error: string | null;
  duration_ms: number | null;
  created_at: Date;
  updated_at: Date;
}

const CRON_RUN_COLUMNS = Prisma.sql`id, cron_job_id, cron, scheduled_for, status, attempts, response_status,
  response_data, request_data, error, duration_ms, created_at, updated_at`;

const cronRunFromRow = (row: CronRunRow): CronRunRecord => ({
  id: row.id,
  cronJobId: row.cron_job_id,
  cron: row.cron,
  scheduledFor: row.scheduled_for,
  status: row.status as CronRunStatus,
  attempts: row.attempts,
  responseStatus: row.response_status,
  responseData: row.response_data,
  requestData: row.request_data,
  error: row.error,
  durationMs: row.duration_ms,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** The runs of a cron job created since `since`, newest first (its history). */
export async function listCronRuns(db: Db, cronJobId: string, since: Date): Promise<CronRunRecord[]> {
  const rows = await db.$queryRaw<CronRunRow[]>`
    SELECT ${CRON_RUN_COLUMNS} FROM cron_runs
    WHERE cron_job_id = ${cronJobId} AND created_at >= ${since}
    ORDER BY created_at DESC, id DESC`;
  return rows.map(cronRunFromRow);
}

/** What a worker needs to deliver one run. */
interface StartedRun {
  run: CronRunRecord;
  /** The cron job's organization: whose turn the delivery takes in the worker's dispatcher. */
  orgId: string;
  destination: string;
  signingSecret: string;
  /** The secret the last rotation replaced, while its overlap lasts; null otherwise. */
  previousSigningSecret: string | null;
  /**
   * The run's delivery policy, fixed when the run was created: the cron job's own fields over the
   * organization's default of that moment (contract §10.1); null: the deployment's defaults.
   */
  deliveryPolicy: DeliveryPolicy | null;
  /** The run's flow (contract §10.2), its cron job's when the run was created; null: none. */
  flowKey: string | null;
}

/** The organization's secrets, as a firing reads them with its job. */
interface SecretColumns {
  signing_secret: string;
  previous_signing_secret: string | null;
  delivery_policy: DeliveryPolicy | null;
  flow_key: string | null;
}

type StartRunResult =
  /** A new run: this firing delivers it. */
  | { kind: "started"; started: StartedRun }
  /**
   * The run of this time exists and is still Queued: a retry, or a copy of its job after a worker
   * died or lost the job's lock. Delivered on only once taken over from `owner` (takeOverCronRun).
   */
  | { kind: "resumed"; started: StartedRun; owner: DeliveryOwner }
  /** Nothing to deliver: the job is gone or Disabled, or this time's run already finished. */
  | { kind: "skipped"; reason: string };

/**
 * Starts the run of one firing of an Active cron job: one row per (job, scheduled time), holding
 * the expression and payload of that moment.
 */
export async function startCronRun(
  db: Db,
  cronJobId: string,
  scheduledFor: Date,
  now: Date,
  workerId: string,
): Promise<StartRunResult> {
  const runId = newId("run");
  const [created] = await db.$queryRaw<(CronRunRow & SecretColumns & { destination: string; owner_org_id: string })[]>`
    WITH job AS (
      SELECT j.id, j.org_id, j.expression, j.payload, j.destination, o.signing_secret, ${PREVIOUS_SECRET_WHILE_VALID},
        -- The job's own fields win over the organization's default, field by field (mergeWithDefault).
        NULLIF(COALESCE(o.delivery_policy, '{}'::jsonb) || COALESCE(j.delivery_policy, '{}'::jsonb), '{}'::jsonb)
          AS delivery_policy, j.flow_key
      FROM cron_jobs j JOIN organizations o ON o.id = j.org_id
      WHERE j.id = ${cronJobId} AND j.status = 'Active'
    ), inserted AS (
      INSERT INTO cron_runs (id, cron_job_id, org_id, cron, scheduled_for, status, attempts, request_data, claimed_by,
        delivery_policy, flow_key, created_at, updated_at)
      SELECT ${runId}, job.id, job.org_id, job.expression, ${scheduledFor}, 'Queued', 0, job.payload, ${workerId},
        job.delivery_policy, job.flow_key, ${now}, ${now}
      FROM job
      ON CONFLICT (cron_job_id, scheduled_for) DO NOTHING
      RETURNING ${CRON_RUN_COLUMNS}
    )
    SELECT inserted.*, job.destination, job.signing_secret, job.previous_signing_secret, job.org_id AS owner_org_id,
      job.delivery_policy, job.flow_key
    FROM inserted, job`;
  if (created) {
    return {
      kind: "started",
      started: {
        run: cronRunFromRow(created),
        orgId: created.owner_org_id,
        destination: created.destination,
        signingSecret: created.signing_secret,
        previousSigningSecret: created.previous_signing_secret,
        deliveryPolicy: created.delivery_policy,
        flowKey: created.flow_key,
      },
    };
  }
  const [existing] = await db.$queryRaw<
    (CronRunRow &
      SecretColumns & { destination: string; job_status: string; owner_org_id: string; claimed_by: string | null })[]
  >`
    SELECT r.id, r.cron_job_id, r.cron, r.scheduled_for, r.status, r.attempts, r.response_status, r.response_data,
           r.request_data, r.error, r.duration_ms, r.created_at, r.updated_at, r.claimed_by,
           j.destination, j.status AS job_status, o.signing_secret, ${PREVIOUS_SECRET_WHILE_VALID},
           j.org_id AS owner_org_id, r.delivery_policy, r.flow_key
    FROM cron_runs r JOIN cron_jobs j ON j.id = r.cron_job_id JOIN organizations o ON o.id = j.org_id
    WHERE r.cron_job_id = ${cronJobId} AND r.scheduled_for = ${scheduledFor}`;
  if (!existing) return { kind: "skipped", reason: "cron job is missing or disabled" };
  if (existing.status !== "Queued") return { kind: "skipped", reason: "run already finished" };
  return {
    kind: "resumed",
    started: {
      run: cronRunFromRow(existing),
      orgId: existing.owner_org_id,
      destination: existing.destination,
      signingSecret: existing.signing_secret,
      previousSigningSecret: existing.previous_signing_secret,
      deliveryPolicy: existing.delivery_policy,
      flowKey: existing.flow_key,
    },
    owner: { workerId: existing.claimed_by, since: existing.updated_at },
  };
}

/**
 * Makes `workerId` the owner of a Queued run whose owner is gone or let it go (a retry), only if
 * nothing changed since `from` was read: of two workers taking it over at once, one wins.
 */
export async function takeOverCronRun(
  db: Db,
  runId: string,
  from: DeliveryOwner,
  workerId: string,
  now: Date,
): Promise<boolean> {
  const taken = await db.$executeRaw`
    UPDATE cron_runs SET claimed_by = ${workerId}, updated_at = ${now}
    WHERE id = ${runId} AND status = 'Queued' AND claimed_by IS NOT DISTINCT FROM ${from.workerId}
      AND updated_at = ${from.since}`;
  return taken === 1;
}

/**
 * Lets go of a Queued run this worker owns without an attempt (its flow or its origin's health held
 * it back longer than the worker keeps it): whichever worker takes its firing next takes it over at once.
 */
export async function releaseCronRunClaim(db: Db, runId: string, workerId: string, now: Date): Promise<void> {
  await db.$executeRaw`
    UPDATE cron_runs SET claimed_by = NULL, updated_at = ${now}
    WHERE id = ${runId} AND status = 'Queued' AND claimed_by = ${workerId}`;
}

interface RunAttempt {
  responseStatus: number | null;
  responseData: string | null;
  error: string | null;
  durationMs: number;
  at: Date;
}

/**
 * Records one attempt of a Queued run; ends it `Sent` when it succeeded or `Failed To Send` when it
 * failed with no attempt to follow: `last` (its retry plan says so), or attempt `maxAttempts`.
 * Returns the attempt's number and the final status, if any.
 */
export async function recordCronRunAttempt(
  db: Db,
  runId: string,
  attempt: RunAttempt,
  succeeded: boolean,
  plan: { maxAttempts: number; last: boolean },
): Promise<{ attempt: number; final: "Sent" | "Failed To Send" | null }> {
  const { maxAttempts, last } = plan;
  const [row] = await db.$queryRaw<{ attempts: number; status: string }[]>`
    UPDATE cron_runs SET
      attempts = attempts + 1,
      response_status = ${attempt.responseStatus},
      response_data = ${attempt.responseData},
      error = ${attempt.error},
      duration_ms = ${Math.round(attempt.durationMs)},
      status = CASE WHEN ${succeeded} THEN 'Sent' WHEN ${last} OR attempts + 1 >= ${maxAttempts} THEN 'Failed To Send' ELSE 'Queued' END,
      finished_at = CASE WHEN ${succeeded} OR ${last} OR attempts + 1 >= ${maxAttempts} THEN ${attempt.at}::timestamptz END,
      -- Handed back for a retry, which any worker may take: it is nobody's until then.
      claimed_by = CASE WHEN ${succeeded} OR ${last} OR attempts + 1 >= ${maxAttempts} THEN claimed_by END,
      updated_at = ${attempt.at}
    WHERE id = ${runId} AND status = 'Queued'
    RETURNING attempts, status`;
  if (!row) return { attempt: 0, final: null };
  return { attempt: row.attempts, final: row.status === "Queued" ? null : (row.status as "Sent" | "Failed To Send") };
}
