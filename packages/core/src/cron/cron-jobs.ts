import { type Db, Prisma } from "@punctual/db";
import { forbidden, notFound } from "../errors.ts";
import { newId } from "../ids.ts";
import type { CronJobStatus } from "../statuses.ts";
import type { CronJobRecord } from "./cron-record.ts";

// The only module that writes cron jobs' statuses (contract §4, §6): Active ⇄ Disabled; a job is
// deleted with its history. Its runs are written in cron-runs.ts.

export const CRON_JOB_NOT_FOUND = "Unable to find cron job";

const cronJobLimitReached = (limit: number) => forbidden(`Cron job limit of ${limit} reached for this organization`);

interface CronJobRow {
  id: string;
  org_id: string;
  expression: string;
  timezone: string;
  destination: string;
  payload: string;
  status: string;
  created_at: Date;
  updated_at: Date;
  running: boolean;
}

const CRON_JOB_COLUMNS = Prisma.sql`j.id, j.org_id, j.expression, j.timezone, j.destination, j.payload, j.status,
  j.created_at, j.updated_at,
  EXISTS (SELECT 1 FROM cron_runs r WHERE r.cron_job_id = j.id AND r.status = 'Queued') AS running`;

const cronJobFromRow = (row: CronJobRow): CronJobRecord => ({
  id: row.id,
  orgId: row.org_id,
  expression: row.expression,
  timezone: row.timezone,
  destination: row.destination,
  payload: row.payload,
  status: row.status as CronJobStatus,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  running: row.running,
});

interface NewCronJob {
  orgId: string;
  expression: string;
  timezone: string;
  destination: string;
  payload: string;
}

/**
 * Creates an Active cron job. The per-organization limit is counted under a lock on the
 * organization's row, so concurrent creates cannot pass it.
 */
export async function createCronJob(db: Db, input: NewCronJob, now: Date, limit: number): Promise<CronJobRecord> {
  return db.$transaction(async (tx) => {
    await tx.$queryRaw`SELECT id FROM organizations WHERE id = ${input.orgId} FOR UPDATE`;
    const count = await tx.cronJob.count({ where: { orgId: input.orgId } });
    if (count >= limit) throw cronJobLimitReached(limit);
    const job = await tx.cronJob.create({
      data: { id: newId("cron"), ...input, status: "Active", createdAt: now, updatedAt: now },
    });
    return { ...job, status: job.status as CronJobStatus, running: false };
  });
}

/** One cron job of an organization, or undefined. */
export async function findCronJob(db: Db, orgId: string, cronJobId: string): Promise<CronJobRecord | undefined> {
  // An id with NUL names no job, and Postgres would refuse the text outright.
  if (cronJobId.includes("\u0000")) return undefined;
  const [row] = await db.$queryRaw<CronJobRow[]>`
    SELECT ${CRON_JOB_COLUMNS} FROM cron_jobs j WHERE j.id = ${cronJobId} AND j.org_id = ${orgId}`;
  return row ? cronJobFromRow(row) : undefined;
}

/** Every cron job of an organization, oldest first. */
export async function listCronJobs(db: Db, orgId: string): Promise<CronJobRecord[]> {
  const rows = await db.$queryRaw<CronJobRow[]>`
    SELECT ${CRON_JOB_COLUMNS} FROM cron_jobs j WHERE j.org_id = ${orgId} ORDER BY j.created_at, j.id`;
  return rows.map(cronJobFromRow);
}

interface CronJobChanges {
  payload?: string | undefined;
  destination?: string | undefined;
  expression?: string | undefined;
  timezone?: string | undefined;
  status?: CronJobStatus | undefined;
}

/** Applies a client's edit; returns the job before and after, so the caller can reschedule. */
export async function updateCronJob(
  db: Db,
  orgId: string,
  cronJobId: string,
  changes: CronJobChanges,
  now: Date,
): Promise<{ before: CronJobRecord; after: CronJobRecord }> {
  const before = await findCronJob(db, orgId, cronJobId);
  if (!before) throw notFound(CRON_JOB_NOT_FOUND);
  const updated = await db.cronJob.updateMany({
    where: { id: cronJobId, orgId },
    data: {
      ...(changes.payload === undefined ? {} : { payload: changes.payload }),
      ...(changes.destination === undefined ? {} : { destination: changes.destination }),
      ...(changes.expression === undefined ? {} : { expression: changes.expression }),
      ...(changes.timezone === undefined ? {} : { timezone: changes.timezone }),
      ...(changes.status === undefined ? {} : { status: changes.status }),
      updatedAt: now,
    },
  });
  const after = updated.count === 1 ? await findCronJob(db, orgId, cronJobId) : undefined;
  if (!after) throw notFound(CRON_JOB_NOT_FOUND);
  return { before, after };
}

/** Deletes a cron job and its history; it no longer counts toward the limit. */
export async function deleteCronJob(db: Db, orgId: string, cronJobId: string): Promise<void> {
  if (cronJobId.includes("\u0000")) throw notFound(CRON_JOB_NOT_FOUND);
  const deleted = await db.cronJob.deleteMany({ where: { id: cronJobId, orgId } });
  if (deleted.count === 0) throw notFound(CRON_JOB_NOT_FOUND);
}
