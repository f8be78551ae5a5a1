import { type Db, type DbTransaction, Prisma } from "@punctual/db";
import type { DeliveryOwner } from "../delivery-owner.ts";
import type { DeliveryPolicy } from "../delivery-policy/policy.ts";
import { newId } from "../ids.ts";
import { PREVIOUS_SECRET_WHILE_VALID } from "../organizations/previous-secret.ts";
import { outcomeDataSql, outcomeNoticesSql } from "../outcomes/notices.ts";
import type { CatchUpPolicy, CronRunStatus, OverlapPolicy } from "../statuses.ts";
import { type CronJobFiringState, type FiringRules, needsSettling, planFirings } from "./catch-up.ts";
import type { CronRunRecord } from "./cron-record.ts";
import { jitterOf, scheduleOf } from "./schedule.ts";

// The only module that writes cron runs' statuses (contract §4, §6, §10.4): Queued (made by a
// firing, or by its catch-up) → Sent | Failed To Send, or Skipped at once (overlap). A run is
// unique per (cron job, scheduled time) (INSERT … ON CONFLICT DO NOTHING), so a duplicate firing of
// the same time finds the run instead of delivering it again. It also writes the cron job's run
// count and its `Completed` status, in the transaction that makes the run reaching maxRuns or the
// end of the schedule (cron-jobs.ts writes the rest of the job).

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
  /**
   * When its first attempt is due: `scheduledFor` plus the job's jitter for it (jitterOf); its
   * lateness is measured from here (contract §10.4).
   */
  sendAt: Date;
  /** The job's overlap policy now: with `buffer`, the end of this run lets the waiting one go. */
  overlap: OverlapPolicy;
}

/** The organization's secrets, as a firing reads them with its job. */
interface SecretColumns {
  signing_secret: string;
  previous_signing_secret: string | null;
  delivery_policy: DeliveryPolicy | null;
  flow_key: string | null;
}

/** What else a firing's decision did, for the worker to follow up in Redis. */
export interface FiringAftermath {
  /**
   * Runs made besides the firing's own (caught up), Queued and nobody's: each needs a job of its
   * own (cronRunRedriveJobId), which the reconciler also gives it if the worker could not.
   */
  caughtUp: { id: string; scheduledFor: Date }[];
  /** The job became Completed (its maxRuns reached, or no firing left): its scheduler must go. */
  completed: boolean;
}

/** Why a run does not go now: its jittered time is later, or earlier runs are undecided (`overlap: buffer`). */
export type RunWait = { reason: "jitter"; until: number } | { reason: "buffered" };

export type StartRunResult =
  /** A new run: this firing delivers it now. */
  | { kind: "started"; started: StartedRun; after?: FiringAftermath }
  /** A new run, nobody's until it may go: the firing's job waits (`until`, or until the earlier runs end). */
  | { kind: "waiting"; runId: string; wait: RunWait; after?: FiringAftermath }
  /**
   * The run of this time exists and is still Queued: a retry, a run that waited, or a copy of its
   * job after a worker died or lost the job's lock. Delivered on only once taken over from `owner`
   * (takeOverCronRun), and, when it has not been attempted and is nobody's, once `wait` is over.
   */
  | { kind: "resumed"; started: StartedRun; owner: DeliveryOwner; wait?: RunWait }
  /**
   * Nothing to deliver: the job is gone or not Active, this time's run already finished or was
   * Skipped, or the firing was missed or superseded (catch-up) or came after the job's maxRuns.
   */
  | { kind: "skipped"; reason: string; after?: FiringAftermath };

/** The rules of firings: the deployment's CRON_MISSED_AFTER_MS and CRON_RUNS_KEPT_PER_JOB. */
export interface CronFiringRules extends FiringRules {
  /** Runs kept per job: making one deletes the oldest final runs beyond it. */
  runsKeptPerJob: number;
}

/** The configuration's defaults (config.ts). */
export const DEFAULT_FIRING_RULES: CronFiringRules = { missedAfterMs: 60_000, runsKeptPerJob: 1_000 };

/** Runs deleted at most per trim (a run made deletes what is beyond the kept history, in steps). */
const TRIM_BATCH = 100;

/** The job's columns a firing reads: its run's fields, its organization's secrets and its timing. */
const JOB_FOR_RUN = Prisma.sql`j.id, j.org_id, COALESCE(j.expression, j.every, '') AS cron, j.payload, j.destination,
  o.signing_secret, ${PREVIOUS_SECRET_WHILE_VALID},
  -- The job's own fields win over the organization's default, field by field (mergeWithDefault).
  NULLIF(COALESCE(o.delivery_policy, '{}'::jsonb) || COALESCE(j.delivery_policy, '{}'::jsonb), '{}'::jsonb)
    AS delivery_policy, j.flow_key, j.overlap, j.jitter_ms`;

interface JobForRun extends SecretColumns {
  id: string;
  org_id: string;
  cron: string;
  payload: string;
  destination: string;
  overlap: string;
  jitter_ms: number;
}

/** A job's timing and counts: what a firing is decided from (firingStateOf). */
interface JobTimingColumns {
  expression: string | null;
  timezone: string;
  every_ms: bigint | null;
  start_at: Date | null;
  end_at: Date | null;
  max_runs: number | null;
  run_count: number;
  catch_up: string;
  catch_up_window_ms: number;
  overlap: string;
  since: Date;
}

/** A job's timing and counts, as the decision reads them under its lock. */
interface LockedJob extends JobForRun, JobTimingColumns {
  status: string;
}

const startedRun = (row: CronRunRow & JobForRun, sendAt: number): StartedRun => ({
  run: cronRunFromRow(row),
  orgId: row.org_id,
  destination: row.destination,
  signingSecret: row.signing_secret,
  previousSigningSecret: row.previous_signing_secret,
  deliveryPolicy: row.delivery_policy,
  flowKey: row.flow_key,
  sendAt: new Date(sendAt),
  overlap: row.overlap as OverlapPolicy,
});

/** When a run's first attempt is due: its firing plus the job's jitter for it. */
const sendAtOf = (cronJobId: string, scheduledFor: Date, jitterMs: number) =>
  scheduledFor.getTime() + jitterOf(cronJobId, scheduledFor.getTime(), jitterMs);

/**
 * Deletes a job's oldest final runs beyond the `kept` newest (its newest run always stays: the
 * catch-up starts from it), at most TRIM_BATCH at once: each run made keeps the history bounded.
 */
const trimStatement = (cronJobId: string, kept: number) => Prisma.sql`
  DELETE FROM cron_runs WHERE id IN (
    SELECT id FROM cron_runs WHERE cron_job_id = ${cronJobId}
    ORDER BY scheduled_for DESC OFFSET ${Math.max(kept, 1)} LIMIT ${TRIM_BATCH})
  AND status <> 'Queued'`;

/**
 * Starts the run of one firing of an Active cron job (contract §4, §10.4): one row per (job,
 * scheduled time), holding the expression (or interval) and payload of that moment. A job with the
 * default timing rules (catchUp skip, overlap allow, no maxRuns, endAt or jitter) is decided in one
 * statement; any other under the job's row lock (planFirings, catch-up.ts): the firing may be
 * missed, superseded, Skipped, made to wait, or bring caught-up runs, and the run that reaches
 * maxRuns or ends the schedule makes the job Completed in the same transaction.
 */
export async function startCronRun(
  db: Db,
  cronJobId: string,
  scheduledFor: Date,
  now: Date,
  workerId: string,
  rules: CronFiringRules = DEFAULT_FIRING_RULES,
): Promise<StartRunResult> {
  const started = await startDefaultCronRun(db, cronJobId, scheduledFor, now, workerId, rules);
  if (started) return started;
  const existing = await findRun(db, cronJobId, scheduledFor, now);
  if (existing) return existing;
  const decided = await db.$transaction((tx) =>
    decideUnderLock(tx, cronJobId, scheduledFor.getTime(), now, workerId, rules, undefined),
  );
  // A run of this time was made meanwhile (another firing of it, a catch-up): resumed as one.
  if (decided === "run exists") return (await findRun(db, cronJobId, scheduledFor, now)) ?? runVanished();
  if (decided.made > 0) await db.$executeRaw(trimStatement(cronJobId, rules.runsKeptPerJob));
  return decided.result;
}

/**
 * The run of a firing of a job with the default timing rules, made in one statement; undefined for
 * any other job, or when the run exists. Its decision does not depend on the moment it is made
 * before the firing (no overlap, catch-up, limit or window to judge), so a worker holding the
 * firing's job early (its lead, schedule.ts) makes it then and only sends at the firing.
 */
export async function startDefaultCronRun(
  db: Db,
  cronJobId: string,
  scheduledFor: Date,
  now: Date,
  workerId: string,
  rules: CronFiringRules = DEFAULT_FIRING_RULES,
): Promise<StartRunResult | undefined> {
  const runId = newId("run");
  // A firing is missed (catchUp skip) when its job starts later than this; never, with an infinite grace.
  const missedBefore = new Date(Number.isFinite(rules.missedAfterMs) ? now.getTime() - rules.missedAfterMs : 0);
  const [created] = await db.$queryRaw<(CronRunRow & JobForRun)[]>`
    WITH job AS (
      SELECT ${JOB_FOR_RUN}
      FROM cron_jobs j JOIN organizations o ON o.id = j.org_id
      WHERE j.id = ${cronJobId} AND j.status = 'Active' AND j.catch_up = 'skip' AND j.overlap = 'allow'
        AND j.max_runs IS NULL AND j.end_at IS NULL AND j.jitter_ms = 0 AND ${scheduledFor}::timestamptz >= ${missedBefore}
    ), inserted AS (
      INSERT INTO cron_runs (id, cron_job_id, org_id, cron, scheduled_for, status, attempts, request_data, claimed_by,
        delivery_policy, flow_key, created_at, updated_at)
      SELECT ${runId}, job.id, job.org_id, job.cron, ${scheduledFor}, 'Queued', 0, job.payload, ${workerId},
        job.delivery_policy, job.flow_key, ${now}, ${now}
      FROM job
      ON CONFLICT (cron_job_id, scheduled_for) DO NOTHING
      RETURNING ${CRON_RUN_COLUMNS}
    ), counted AS (
      UPDATE cron_jobs SET run_count = cron_jobs.run_count + 1 FROM inserted WHERE cron_jobs.id = inserted.cron_job_id
      RETURNING cron_jobs.id
    ), trimmed AS (
      ${trimStatement(cronJobId, rules.runsKeptPerJob)} AND EXISTS (SELECT 1 FROM inserted)
      RETURNING id
    )
    SELECT inserted.*, job.org_id, job.destination, job.signing_secret, job.previous_signing_secret,
      job.delivery_policy, job.flow_key, job.overlap, job.jitter_ms,
      (SELECT count(*) FROM counted) AS counted, (SELECT count(*) FROM trimmed) AS trimmed
    FROM inserted, job`;
  return created ? { kind: "started", started: startedRun(created, scheduledFor.getTime()) } : undefined;
}

const runVanished = (): StartRunResult => ({ kind: "skipped", reason: "run already finished" });

/** The run of (job, time) when it exists: resumed while Queued, else skipped. */
async function findRun(db: Db, cronJobId: string, scheduledFor: Date, now: Date): Promise<StartRunResult | undefined> {
  const [existing] = await db.$queryRaw<
    (CronRunRow & JobForRun & { claimed_by: string | null; earlier_queued: boolean })[]
  >`
    SELECT r.id, r.cron_job_id, r.cron, r.scheduled_for, r.status, r.attempts, r.response_status, r.response_data,
           r.request_data, r.error, r.duration_ms, r.created_at, r.updated_at, r.claimed_by,
           j.destination, o.signing_secret, ${PREVIOUS_SECRET_WHILE_VALID},
           j.org_id, r.delivery_policy, r.flow_key, j.overlap, j.jitter_ms,
           EXISTS (SELECT 1 FROM cron_runs e WHERE e.cron_job_id = r.cron_job_id AND e.status = 'Queued'
             AND e.scheduled_for < r.scheduled_for) AS earlier_queued
    FROM cron_runs r JOIN cron_jobs j ON j.id = r.cron_job_id JOIN organizations o ON o.id = j.org_id
    WHERE r.cron_job_id = ${cronJobId} AND r.scheduled_for = ${scheduledFor}`;
  if (!existing) return undefined;
  if (existing.status !== "Queued") return { kind: "skipped", reason: "run already finished" };
  const sendAt = sendAtOf(cronJobId, existing.scheduled_for, existing.jitter_ms);
  const started = startedRun(existing, sendAt);
  const owner = { workerId: existing.claimed_by, since: existing.updated_at };
  // Not attempted and nobody's: a run that waits for its jittered time or for the earlier runs.
  let wait: RunWait | undefined;
  if (existing.attempts === 0 && existing.claimed_by === null) {
    if (sendAt > now.getTime()) wait = { reason: "jitter", until: sendAt };
    else if (existing.overlap === "buffer" && existing.earlier_queued) wait = { reason: "buffered" };
  }
  return { kind: "resumed", started, owner, ...(wait ? { wait } : {}) };
}

/** The rows a locked decision reads of the job's runs. */
interface RunCounts {
  last_run_at: Date | null;
  queued: number;
  own_exists: boolean;
}

/**
 * Decides a firing (`firing`, ms) or the reconciler's look at a job (`firing` undefined) under the
 * job's row lock: the counts are read after the lock is held, so two firings on two workers (or a
 * firing and the reconciler) decide one after the other. Makes the runs and updates the job's run
 * count and status in the same transaction.
 */
async function decideUnderLock(
  tx: DbTransaction,
  cronJobId: string,
  firing: number | undefined,
  now: Date,
  workerId: string | null,
  rules: CronFiringRules,
  reconcile: { lost: boolean } | undefined,
): Promise<"run exists" | { result: StartRunResult; made: number; runs: { id: string; scheduledFor: Date }[] }> {
  const [job] = await tx.$queryRaw<LockedJob[]>`
    SELECT ${JOB_FOR_RUN}, j.status, j.expression, j.timezone, j.every_ms, j.start_at, j.end_at, j.max_runs,
      j.run_count, j.catch_up, j.catch_up_window_ms, COALESCE(j.schedule_since, j.created_at) AS since
    FROM cron_jobs j JOIN organizations o ON o.id = j.org_id
    WHERE j.id = ${cronJobId}
    FOR UPDATE OF j`;
  if (!job || job.status === "Disabled") {
    return { result: { kind: "skipped", reason: "cron job is missing or disabled" }, made: 0, runs: [] };
  }
  if (job.status !== "Active")
    return { result: { kind: "skipped", reason: `cron job is ${job.status}` }, made: 0, runs: [] };
  const [counts] = await tx.$queryRaw<RunCounts[]>`
    SELECT (SELECT max(scheduled_for) FROM cron_runs WHERE cron_job_id = ${cronJobId}) AS last_run_at,
      (SELECT count(*)::int FROM cron_runs WHERE cron_job_id = ${cronJobId} AND status = 'Queued') AS queued,
      EXISTS (SELECT 1 FROM cron_runs WHERE cron_job_id = ${cronJobId}
        AND scheduled_for = ${firing === undefined ? null : new Date(firing)}::timestamptz) AS own_exists`;
  if (counts?.own_exists) return "run exists";
  const state = firingStateOf(job, counts?.last_run_at ?? null, counts?.queued ?? 0);
  const plan = planFirings(state, firing, now.getTime(), rules, reconcile);
  const rows = plan.runs.map((planned) => {
    const at = new Date(planned.scheduledFor);
    const sendAt = sendAtOf(cronJobId, at, job.jitter_ms);
    // The firing's own run is this worker's when it goes now (a run without jitter goes at once, as a
    // firing taken a few ms early by this worker's clock does); every other run is nobody's until its job runs.
    const mine =
      planned.scheduledFor === firing &&
      planned.status === "send" &&
      (sendAt <= now.getTime() || sendAt === planned.scheduledFor);
    return {
      id: newId("run"),
      at,
      sendAt,
      status: planned.status === "skipped" ? "Skipped" : "Queued",
      claimedBy: mine ? workerId : null,
    };
  });
  const inserted =
    rows.length === 0
      ? []
      : await tx.$queryRaw<CronRunRow[]>`
    INSERT INTO cron_runs (id, cron_job_id, org_id, cron, scheduled_for, status, attempts, request_data, claimed_by,
      delivery_policy, flow_key, finished_at, created_at, updated_at)
    SELECT v.id, ${job.id}, ${job.org_id}, ${job.cron}, v.scheduled_for, v.status, 0, ${job.payload}, v.claimed_by,
      ${job.delivery_policy === null ? null : JSON.stringify(job.delivery_policy)}::jsonb, ${job.flow_key},
      CASE WHEN v.status = 'Skipped' THEN ${now}::timestamptz END, ${now}, ${now}
    FROM (VALUES ${Prisma.join(
      rows.map((row) => Prisma.sql`(${row.id}, ${row.at}::timestamptz, ${row.status}, ${row.claimedBy}::text)`),
    )}) AS v(id, scheduled_for, status, claimed_by)
    ON CONFLICT (cron_job_id, scheduled_for) DO NOTHING
    RETURNING ${CRON_RUN_COLUMNS}`;
  const madeIds = new Set(inserted.map((row) => row.id));
  const made = rows.filter((row) => madeIds.has(row.id));
  const counted = made.filter((row) => row.status === "Queued").length;
  if (counted > 0 || plan.completes) {
    await tx.$executeRaw`
      UPDATE cron_jobs SET run_count = run_count + ${counted},
        status = CASE WHEN ${plan.completes} THEN 'Completed' ELSE status END,
        updated_at = CASE WHEN ${plan.completes} THEN ${now}::timestamptz ELSE updated_at END
      WHERE id = ${cronJobId}`;
  }
  const caughtUp = made
    .filter((row) => row.status === "Queued" && row.at.getTime() !== firing)
    .map((row) => ({ id: row.id, scheduledFor: row.at }));
  const after: FiringAftermath | undefined =
    caughtUp.length > 0 || plan.completes ? { caughtUp, completed: plan.completes } : undefined;
  const withAfter = after ? { after } : {};
  const own = made.find((row) => row.at.getTime() === firing);
  const ownRow = inserted.find((row) => row.id === own?.id);
  let result: StartRunResult;
  if (!own || !ownRow) {
    result = { kind: "skipped", reason: plan.dropped ?? "the job made its maxRuns runs", ...withAfter };
  } else if (own.status === "Skipped") {
    result = { kind: "skipped", reason: "Skipped: an earlier run is undecided (overlap)", ...withAfter };
  } else if (own.claimedBy === null) {
    const wait: RunWait = own.sendAt > now.getTime() ? { reason: "jitter", until: own.sendAt } : { reason: "buffered" };
    result = { kind: "waiting", runId: own.id, wait, ...withAfter };
  } else {
    result = { kind: "started", started: startedRun({ ...job, ...ownRow }, own.sendAt), ...withAfter };
  }
  return { result, made: made.length, runs: caughtUp };
}

/** What the reconciler's look at the cron jobs decided (settleCronJobs). */
export interface CronJobsSettled {
  /** Runs made by catch-up, Queued and nobody's: each needs its job (cronRunRedriveJobId). */
  runs: { cronJobId: string; id: string; scheduledFor: Date }[];
  /** Jobs that became Completed: their schedulers must go. */
  completed: string[];
}

/** What a firing is decided from (catch-up.ts): a job's timing columns, its newest run and its runs Queued. */
function firingStateOf(job: JobTimingColumns, lastRunAt: Date | null, queued: number): CronJobFiringState {
  return {
    schedule: scheduleOf({
      expression: job.expression,
      timezone: job.timezone,
      everyMs: job.every_ms === null ? null : Number(job.every_ms),
      startAt: job.start_at,
      endAt: job.end_at,
      scheduleSince: job.since,
    }),
    catchUp: job.catch_up as CatchUpPolicy,
    catchUpWindowMs: job.catch_up_window_ms,
    overlap: job.overlap as OverlapPolicy,
    maxRuns: job.max_runs,
    runCount: job.run_count,
    since: job.since.getTime(),
    lastRunAt: lastRunAt?.getTime() ?? null,
    queued,
  };
}

interface SettleCandidate extends JobTimingColumns {
  id: string;
  last_run_at: Date | null;
}

/**
 * The reconciler's part of the cron jobs' timing (contract §10.4), from Postgres alone: an Active
 * job whose next firing after its newest run is overdue by CRON_MISSED_AFTER_MS (or at all, for the
 * jobs in `lost`, whose schedulers Redis had lost) gets its catch-up runs (`latest`, `all`), and one
 * with no firing left (its endAt passed while nothing fired) or at its maxRuns becomes Completed.
 * Each job is decided under its row lock, as a firing is; a cheap look first leaves the rest alone.
 */
export async function settleCronJobs(
  db: Db,
  now: Date,
  rules: CronFiringRules,
  lost: ReadonlySet<string> = new Set(),
): Promise<CronJobsSettled> {
  // Only jobs that may need it: their scheduler lost, their maxRuns reached, their endAt passed, or
  // (catchUp latest, all) nothing handled for CRON_MISSED_AFTER_MS (a newer run means no firing is overdue).
  const quietSince = new Date(now.getTime() - rules.missedAfterMs);
  const candidates = await db.$queryRaw<SettleCandidate[]>`
    SELECT * FROM (
      SELECT j.id, j.expression, j.timezone, j.every_ms, j.start_at, j.end_at, j.max_runs, j.run_count, j.catch_up,
        j.catch_up_window_ms, j.overlap, COALESCE(j.schedule_since, j.created_at) AS since,
        (SELECT max(r.scheduled_for) FROM cron_runs r WHERE r.cron_job_id = j.id) AS last_run_at
      FROM cron_jobs j
      WHERE j.status = 'Active'
    ) AS job
    WHERE job.id = ANY(${[...lost]}::text[])
      OR (job.max_runs IS NOT NULL AND job.run_count >= job.max_runs)
      OR (job.end_at IS NOT NULL AND job.end_at < ${now})
      OR (job.catch_up <> 'skip' AND GREATEST(job.last_run_at, job.since) < ${quietSince})`;
  const settled: CronJobsSettled = { runs: [], completed: [] };
  for (const job of candidates) {
    const state = firingStateOf(job, job.last_run_at, 0);
    if (!needsSettling(state, now.getTime(), rules, lost.has(job.id))) continue;
    const decided = await db.$transaction((tx) =>
      decideUnderLock(tx, job.id, undefined, now, null, rules, { lost: lost.has(job.id) }),
    );
    if (decided === "run exists") continue;
    if (decided.made > 0) await db.$executeRaw(trimStatement(job.id, rules.runsKeptPerJob));
    settled.runs.push(...decided.runs.map((run) => ({ cronJobId: job.id, ...run })));
    if (decided.result.kind !== "resumed" && decided.result.after?.completed) settled.completed.push(job.id);
  }
  return settled;
}

/**
 * The job's oldest Queued run not attempted yet: with `overlap: buffer`, the one waiting for the
 * run that just ended (its job is then woken rather than left to look again later).
 */
export async function nextWaitingCronRun(
  db: Db,
  cronJobId: string,
): Promise<{ id: string; scheduledFor: Date } | undefined> {
  const [row] = await db.$queryRaw<{ id: string; scheduled_for: Date }[]>`
    SELECT id, scheduled_for FROM cron_runs
    WHERE cron_job_id = ${cronJobId} AND status = 'Queued' AND attempts = 0
    ORDER BY scheduled_for LIMIT 1`;
  return row ? { id: row.id, scheduledFor: row.scheduled_for } : undefined;
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
 * Returns the attempt's number and the final status, if any. A run ended here writes its outcome
 * notices in the same statement (its job's callback, the organization's `cron.run.failed` webhooks).
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
    WITH recorded AS (
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
      RETURNING id, cron_job_id, org_id, scheduled_for, attempts, status, response_status, response_data, error
    ), noticed AS (${outcomeNoticesSql(
      "cron.run",
      Prisma.sql`SELECT r.org_id, r.id, r.status, j.callback_url, ${outcomeDataSql({
        id: Prisma.sql`r.id`,
        status: Prisma.sql`r.status`,
        scheduledTime: Prisma.sql`r.scheduled_for`,
        attempts: Prisma.sql`r.attempts`,
        responseStatus: Prisma.sql`r.response_status`,
        responseBody: Prisma.sql`r.response_data`,
        error: Prisma.sql`r.error`,
      })} AS data FROM recorded r JOIN cron_jobs j ON j.id = r.cron_job_id WHERE r.status <> 'Queued'`,
      Prisma.sql`${attempt.at}::timestamptz`,
    )}
    )
    SELECT attempts, status FROM recorded`;
  if (!row) return { attempt: 0, final: null };
  return { attempt: row.attempts, final: row.status === "Queued" ? null : (row.status as "Sent" | "Failed To Send") };
}
