import {
  buildDeliveryRequest,
  type Clock,
  type Config,
  CRON_RUN_JOB,
  type CronFiringRules,
  type CronJobData,
  type CronJobSchedulers,
  cronRunRedriveJobId,
  type FiringAftermath,
  firingOfSchedulerJob,
  INFRASTRUCTURE_RETRIES,
  KEEP_FINISHED_JOBS,
  type Logger,
  leadOfRepeatOptions,
  maxAgeDeadline,
  nextWaitingCronRun,
  queueFiringsWithinLead,
  type RunWait,
  recordCronRunAttempt,
  releaseCronRunClaim,
  resolvePolicy,
  scheduleOfRepeatOptions,
  schedulerFiringJobIds,
  startCronRun,
  startDefaultCronRun,
  takeOverCronRun,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job, Queue, RepeatOptions } from "bullmq";
import { createAttemptRecorder, type RecordedDelivery } from "../delivery/attempt-recorder.ts";
import type { Bookkeeping } from "../delivery/bookkeeping.ts";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import { type FlowGate, notSentOutcome } from "../delivery/flow-gate.ts";
import type { DeliveryOwners } from "../delivery/owners.ts";
import { runJobAgainAt } from "../delivery/retry.ts";
import { type AttemptOutcome, originOf } from "../delivery/transport.ts";
import type { DeliveryMetrics } from "../metrics/worker-metrics.ts";

export interface CronRunProcessorDeps {
  db: Db;
  clock: Clock;
  config: Pick<
    Config,
    | "RETRY_DELAYS_MS"
    | "DELIVERY_TIMEOUT_MS"
    | "RETRY_AFTER_MAX_MS"
    | "PREPARE_AHEAD_MS"
    | "CRON_MISSED_AFTER_MS"
    | "CRON_RUNS_KEPT_PER_JOB"
  >;
  /** The cron queue: jobs of caught-up runs, waking a buffered run's job. */
  cronQueue: Queue<CronJobData>;
  /** Takes a Completed job's scheduler off. */
  cronJobSchedulers: Pick<CronJobSchedulers, "unschedule">;
  dispatcher: Dispatcher;
  /** Flows' limits and origins' health, before the dispatcher. */
  gate: Pick<FlowGate, "admit">;
  /** When outcome lines are written (bookkeeping.ts). */
  bookkeeping: Pick<Bookkeeping, "busy" | "afterSends">;
  logger: Logger;
  metrics: DeliveryMetrics;
  /** This worker's id in the runs it sends, and what to do about another's run. */
  owners: DeliveryOwners;
}

/** A firing's data once it has been attempted: its first attempt's start (ms) rides along to the retries. */
interface CronRunJobData extends CronJobData {
  firstAttemptAt?: number;
}

/** When the run's first attempt started, when an earlier attempt of this firing's job made it. */
function firstAttemptOf(job: Job<CronJobData>): Date | undefined {
  const at = (job.data as CronRunJobData).firstAttemptAt;
  return typeof at === "number" ? new Date(at) : undefined;
}

/**
 * How often a buffered run (overlap: buffer) looks again whether the runs before it ended, when the
 * worker ending them did not wake it (it normally does, at once).
 */
export const BUFFERED_RECHECK_MS = 1_000;

/**
 * The time a firing was due: a re-driven run, or a firing queued with its scheduler, carries it in
 * its data; a job scheduler's firing has its job's time as `prevMillis` (and in the job id), the
 * firing less the scheduler's lead (schedule.ts).
 */
export function firingTime(job: Job<CronJobData>): Date | undefined {
  if (job.data.scheduledFor !== undefined) return new Date(job.data.scheduledFor);
  const opts = job.opts as { prevMillis?: number; repeat?: { pattern?: string } };
  const fromOptions = opts.prevMillis;
  const jobTime = typeof fromOptions === "number" && fromOptions > 0 ? fromOptions : Number(job.id?.split(":").at(-1));
  return Number.isFinite(jobTime) && jobTime > 0
    ? new Date(firingOfSchedulerJob(jobTime, opts.repeat ?? {}))
    : undefined;
}

/** Resolves at `at` (epoch ms) by the wall clock, never before. */
async function untilInstant(at: number): Promise<void> {
  for (let early = at - Date.now(); early > 0; early = at - Date.now()) {
    await new Promise((resolve) => setTimeout(resolve, early));
  }
}

/**
 * Processes one firing of a cron job's job scheduler, or the job of a run made by catch-up or
 * re-driven by the reconciler (contract §4, §5, §10.4). The firing is decided in Postgres
 * (startCronRun: the run, one per job and time, so a duplicate firing delivers nothing; under the
 * job's lock when its timing asks for it: catch-up, overlap, maxRuns, endAt, jitter). A run that may
 * not go yet (its jittered time, earlier runs undecided with overlap buffer) waits in the queue, its
 * job delayed, nobody's. A run sent goes through the same request builder and dispatcher as events
 * (its organization takes its turn there), and retries on the same schedule; it ends Sent or Failed
 * To Send.
 */
export function createCronRunProcessor(deps: CronRunProcessorDeps) {
  const { db, clock, config, dispatcher, gate, bookkeeping, logger, metrics, owners, cronQueue } = deps;
  const recorder = createAttemptRecorder({ noun: "cron run", clock, config, logger, metrics, bookkeeping });
  const rules: CronFiringRules = {
    missedAfterMs: config.CRON_MISSED_AFTER_MS,
    runsKeptPerJob: config.CRON_RUNS_KEPT_PER_JOB,
  };

  /** The firing of each run this worker is delivering: a second firing of the same run waits for it. */
  const running = new Map<string, Promise<void>>();

  /**
   * What a firing's decision leaves to Redis: the jobs of the runs it caught up, and a Completed
   * job's scheduler to take off. Failing here loses nothing: the reconciler re-drives Queued runs
   * without a job and removes the schedulers of jobs that are not Active.
   */
  async function followUp(cronJobId: string, after: FiringAftermath): Promise<void> {
    if (after.caughtUp.length > 0) {
      await cronQueue
        .addBulk(
          after.caughtUp.map((run) => ({
            name: CRON_RUN_JOB,
            data: { cronJobId, scheduledFor: run.scheduledFor.getTime() },
            opts: { jobId: cronRunRedriveJobId(run.id), ...INFRASTRUCTURE_RETRIES, ...KEEP_FINISHED_JOBS },
          })),
        )
        .catch((error: unknown) =>
          logger.warn({ err: error, cronJobId }, "could not queue caught-up cron runs; the reconciler will"),
        );
      logger.info(
        { cronJobId, runs: after.caughtUp.map((run) => run.scheduledFor.toISOString()) },
        "cron job caught up missed firings",
      );
    }
    if (after.completed) {
      logger.info({ cronJobId }, "cron job Completed: its maxRuns ran or no firing is left");
      await deps.cronJobSchedulers
        .unschedule(cronJobId)
        .catch((error: unknown) =>
          logger.warn(
            { err: error, cronJobId },
            "could not remove a Completed cron job's scheduler; the reconciler will",
          ),
        );
    }
  }

  /** A run that may not go yet: its firing's job waits in the queue (holding no memory here). */
  function waitFor(job: Job<CronJobData>, token: string | undefined, wait: RunWait): Promise<never> {
    return runJobAgainAt(job, wait.reason === "jitter" ? wait.until : Date.now() + BUFFERED_RECHECK_MS, token);
  }

  /**
   * With overlap buffer, the run that waits for the one that just ended goes now: its job (the
   * scheduler's firing, or the job of a caught-up or re-driven run) is moved out of its delay.
   */
  async function wakeBuffered(cronJobId: string): Promise<void> {
    try {
      const waiting = await nextWaitingCronRun(db, cronJobId);
      if (!waiting) return;
      const firing = waiting.scheduledFor.getTime();
      for (const id of [...schedulerFiringJobIds(cronJobId, firing), cronRunRedriveJobId(waiting.id)]) {
        const queued = await cronQueue.getJob(id);
        if (queued && (await queued.isDelayed())) await queued.promote();
      }
    } catch (error) {
      // It looks again by itself within BUFFERED_RECHECK_MS.
      logger.debug({ err: error, cronJobId }, "could not wake a buffered cron run");
    }
  }

  return async function processCronRun(job: Job<CronJobData>, token?: string): Promise<void> {
    const { cronJobId } = job.data;
    const scheduledFor = firingTime(job);
    if (!scheduledFor) {
      logger.error({ jobId: job.id, cronJobId }, "cron firing without a scheduled time; skipped");
      return;
    }
    // Two firings of one run at once (the job scheduler's and a re-driven one) must not both take the
    // "resumed" path and send it twice: the later one waits, then finds the run finished.
    const runKey = `${cronJobId}@${scheduledFor.getTime()}`;
    for (let earlier = running.get(runKey); earlier; earlier = running.get(runKey)) await earlier;
    let finished = () => {};
    running.set(
      runKey,
      new Promise<void>((resolve) => {
        finished = resolve;
      }),
    );
    try {
      return await deliverFiring(job, cronJobId, scheduledFor, token);
    } finally {
      running.delete(runKey);
      finished();
    }
  };

  async function deliverFiring(
    job: Job<CronJobData>,
    cronJobId: string,
    scheduledFor: Date,
    token: string | undefined,
  ): Promise<void> {
    // Missed (catchUp skip) is judged when the firing's job first starts: a BullMQ retry after an
    // infrastructure error (Postgres unreachable a while) did start in time, and is not missed for it.
    const retried = job.attemptsMade > 0;
    const firingRules = retried ? { ...rules, missedAfterMs: Number.POSITIVE_INFINITY } : rules;
    // Taken late, past its firing, the scheduler made the first firing after now plus the lead: the
    // ones from now to then are queued here (as after a late firing without the lead, the firings
    // between this one and now are the catch-up's).
    const repeat = (job.opts as { repeat?: RepeatOptions }).repeat;
    if (job.data.scheduledFor === undefined && !retried && repeat !== undefined && leadOfRepeatOptions(repeat) > 0) {
      const after = Math.max(scheduledFor.getTime(), Date.now());
      await queueFiringsWithinLead(cronQueue, cronJobId, scheduleOfRepeatOptions(repeat), after).catch(
        (error: unknown) => logger.warn({ err: error, cronJobId }, "could not queue the firings within the lead"),
      );
    }
    // A firing's job is due a lead before it (schedule.ts). A job with the default timing rules gets
    // its run now; any other is decided at the firing, as without the lead (overlap judges the runs
    // of that instant). Either is sent at the firing.
    const early =
      scheduledFor.getTime() > Date.now()
        ? await startDefaultCronRun(db, cronJobId, scheduledFor, clock.now(), owners.self, firingRules)
        : undefined;
    await untilInstant(scheduledFor.getTime());
    const now = clock.now();
    const result = early ?? (await startCronRun(db, cronJobId, scheduledFor, now, owners.self, firingRules));
    if (result.kind !== "resumed" && result.after) await followUp(cronJobId, result.after);
    if (result.kind === "skipped") {
      const missed = result.reason.startsWith("missed") || result.reason.startsWith("superseded");
      logger[missed ? "info" : "debug"](
        { cronJobId, scheduledFor, latenessMs: now.getTime() - scheduledFor.getTime(), reason: result.reason },
        missed ? "cron firing not delivered" : "cron firing skipped",
      );
      return;
    }
    if (result.kind === "waiting") return waitFor(job, token, result.wait);
    if (result.kind === "resumed" && result.wait) return waitFor(job, token, result.wait);
    if (result.kind === "resumed") {
      // Sent on from here only once taken over: while another live worker sends it, this firing
      // steps aside; when the takeover loses to a change, the run is read again.
      const { owner } = result;
      const decision = await owners.decide(owner, resolvePolicy(result.started.deliveryPolicy, config));
      if (decision.kind === "stepAside") {
        metrics.ownerDecision("stepped_aside");
        logger.debug(
          { cronJobId, runId: result.started.run.id, owner: owner.workerId, forMs: decision.forMs },
          "cron run sent by another worker; its firing runs again later",
        );
        return runJobAgainAt(job, Date.now() + decision.forMs, token);
      }
      const run = result.started.run;
      if (!(await takeOverCronRun(db, run.id, owner, owners.self, clock.now()))) {
        return deliverFiring(job, cronJobId, scheduledFor, token);
      }
      if (decision.fromAnother) metrics.ownerDecision("taken_over");
    }
    const { run, orgId, destination, signingSecret, previousSigningSecret, deliveryPolicy, sendAt } = result.started;
    const policy = resolvePolicy(deliveryPolicy, config);

    const origin = originOf(destination);
    // Its flow's limits and its origin's health first (flow-gate.ts); signed once it may go.
    const admission = await gate.admit({
      orgId,
      origin,
      flowKey: result.started.flowKey,
      // Its first attempt is due at the jittered time (contract §10.4), its lateness measured from there.
      dueAt: run.attempts === 0 ? sendAt.getTime() : Date.now(),
      timeoutMs: policy.timeoutMs,
      deadline: maxAgeDeadline(policy.retry, sendAt),
    });
    if (admission.kind === "handBack") {
      // Not sent: the run waits in the queue, nobody's, and whichever worker fires it then sends it.
      await releaseCronRunClaim(db, run.id, owners.self, clock.now());
      return runJobAgainAt(job, admission.at, token);
    }
    let outcome: AttemptOutcome;
    if (admission.kind === "expired") outcome = notSentOutcome(admission.reason, clock.now());
    else {
      const request = buildDeliveryRequest({
        webhookId: run.id,
        payload: run.requestData,
        scheduledTime: run.scheduledFor,
        signingSecret,
        previousSigningSecret,
        now: clock.now(),
        policy,
      });
      outcome = await dispatcher.submit(orgId, origin, {
        url: destination,
        method: request.method,
        body: request.body,
        headers: request.headers,
        timeoutMs: policy.timeoutMs,
      });
      admission.done(outcome);
    }
    const delivery: RecordedDelivery = {
      ids: { cronJobId, runId: run.id },
      orgId,
      dueAt: sendAt,
      firstAttemptAt: firstAttemptOf(job),
      retry: policy.retry,
      attemptsMade: run.attempts,
    };
    const settled = await recorder.record(delivery, outcome, (plan) =>
      recordCronRunAttempt(
        db,
        run.id,
        {
          at: outcome.startedAt,
          responseStatus: outcome.responseStatus,
          responseData: outcome.responseBody,
          error: outcome.error,
          durationMs: outcome.durationMs,
        },
        outcome.ok,
        plan,
      ),
    );
    if (settled.retryAt === undefined) {
      if (result.started.overlap === "buffer") await wakeBuffered(cronJobId);
      return;
    }
    // The next attempt may run in another worker: the first attempt's start goes with the job, for
    // the final log line's lateness only, so failing to store it does not stop the retry.
    if (delivery.firstAttemptAt && firstAttemptOf(job) === undefined) {
      const data: CronRunJobData = { ...job.data, firstAttemptAt: delivery.firstAttemptAt.getTime() };
      await job.updateData(data).catch((error: unknown) => {
        logger.warn({ err: error, cronJobId, runId: run.id }, "could not keep a cron run's first attempt time");
      });
    }
    return runJobAgainAt(job, settled.retryAt, token);
  }
}
