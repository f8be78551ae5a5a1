import {
  type Clock,
  type Config,
  type CronFiringRules,
  type CronJobData,
  type CronJobSchedulers,
  type Logger,
  leadOfRepeatOptions,
  queueFiringsWithinLead,
  resolvePolicy,
  scheduleOfRepeatOptions,
  startCronRun,
  startDefaultCronRun,
  takeOverCronRun,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job, Queue, RepeatOptions } from "bullmq";
import { createAttemptRecorder } from "../delivery/attempt-recorder.ts";
import type { Bookkeeping } from "../delivery/bookkeeping.ts";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import type { FlowGate } from "../delivery/flow-gate.ts";
import type { DeliveryOwners } from "../delivery/owners.ts";
import { runJobAgainAt } from "../delivery/retry.ts";
import type { DeliveryMetrics } from "../metrics/worker-metrics.ts";
import { followUpFiring } from "./firing-follow-up.ts";
import { firingTime } from "./firing-jobs.ts";
import { waitInQueue, wakeBuffered } from "./run-waits.ts";
import { type CronRunSenderDeps, sendCronRun } from "./send-cron-run.ts";

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
 * To Send. The steps after the decision are their own modules: firing-follow-up.ts (caught-up runs'
 * jobs, a Completed job's scheduler), run-waits.ts (a run that may not go yet) and send-cron-run.ts.
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

  const sending: CronRunSenderDeps = {
    db,
    clock,
    dispatcher,
    gate,
    recorder,
    logger,
    self: owners.self,
    wakeBuffered: (cronJobId) => wakeBuffered({ db, cronQueue, logger }, cronJobId),
  };

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
    if (result.kind !== "resumed" && result.after) await followUpFiring(deps, cronJobId, result.after);
    if (result.kind === "skipped") {
      const missed = result.reason.startsWith("missed") || result.reason.startsWith("superseded");
      logger[missed ? "info" : "debug"](
        { cronJobId, scheduledFor, latenessMs: now.getTime() - scheduledFor.getTime(), reason: result.reason },
        missed ? "cron firing not delivered" : "cron firing skipped",
      );
      return;
    }
    if (result.kind === "waiting") return waitInQueue(job, token, result.wait);
    if (result.kind === "resumed" && result.wait) return waitInQueue(job, token, result.wait);
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
    const policy = resolvePolicy(result.started.deliveryPolicy, config);
    return sendCronRun(sending, job, cronJobId, result.started, policy, token);
  }
}
