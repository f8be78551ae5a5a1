import { performance } from "node:perf_hooks";
import {
  buildDeliveryRequest,
  type Clock,
  type Config,
  type CronJobData,
  type Logger,
  recordCronRunAttempt,
  startCronRun,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job } from "bullmq";
import { recordSurely, retryDelay, runJobAgainAt } from "../delivery/retry.ts";
import type { SendScheduler } from "../delivery/send-scheduler.ts";
import { originOf } from "../delivery/transport.ts";
import { type DeliveryMetrics, deliveryOutcome } from "../metrics/worker-metrics.ts";

export interface CronRunProcessorDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "RETRY_DELAYS_MS">;
  scheduler: SendScheduler;
  logger: Logger;
  metrics: DeliveryMetrics;
}

/**
 * The time a firing was due: a re-driven run carries it in its data; a scheduler's firing has it
 * as `prevMillis` (and in the job id).
 */
export function firingTime(job: Job<CronJobData>): Date | undefined {
  if (job.data.scheduledFor !== undefined) return new Date(job.data.scheduledFor);
  const fromOptions = (job.opts as { prevMillis?: number }).prevMillis;
  if (typeof fromOptions === "number" && fromOptions > 0) return new Date(fromOptions);
  const fromId = Number(job.id?.split(":").at(-1));
  return Number.isFinite(fromId) && fromId > 0 ? new Date(fromId) : undefined;
}

/**
 * Processes one firing of a cron job's scheduler (contract §4, §5): create the run (one per job and
 * time, so a duplicate firing delivers nothing), send it through the same request builder and
 * send scheduler as events (its organization takes its turn there), and retry on the same schedule. The run ends Sent or Failed To Send.
 */
export function createCronRunProcessor(deps: CronRunProcessorDeps) {
  const { db, clock, config, scheduler, logger, metrics } = deps;
  const maxAttempts = config.RETRY_DELAYS_MS.length + 1;

  /** The firing of each run this worker is delivering: a second firing of the same run waits for it. */
  const running = new Map<string, Promise<void>>();

  return async function processCronRun(job: Job<CronJobData>, token?: string): Promise<void> {
    const { cronJobId } = job.data;
    const scheduledFor = firingTime(job);
    if (!scheduledFor) {
      logger.error({ jobId: job.id, cronJobId }, "cron firing without a scheduled time; skipped");
      return;
    }
    // Two firings of one run at once (the scheduler's and a re-driven one) must not both take the
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
    const result = await startCronRun(db, cronJobId, scheduledFor, clock.now());
    if (result.kind === "skipped") {
      logger.debug({ cronJobId, scheduledFor, reason: result.reason }, "cron firing skipped");
      return;
    }
    const { run, orgId, destination, signingSecret } = result.started;

    const request = buildDeliveryRequest({
      webhookId: run.id,
      payload: run.requestData,
      scheduledTime: run.scheduledFor,
      signingSecret,
      now: clock.now(),
    });
    const outcome = await scheduler.submit(orgId, originOf(destination), {
      url: destination,
      body: request.body,
      headers: request.headers,
    });
    const { startedAt } = outcome;
    const answeredAt = performance.now();
    const recorded = await recordSurely(
      () =>
        recordCronRunAttempt(
          db,
          run.id,
          {
            at: startedAt,
            responseStatus: outcome.responseStatus,
            responseData: outcome.responseBody,
            error: outcome.error,
            durationMs: outcome.durationMs,
          },
          outcome.ok,
          maxAttempts,
        ),
      (error) => logger.warn({ err: error, runId: run.id }, "could not record a cron run attempt; retrying"),
    );
    metrics.recorded(performance.now() - answeredAt);
    if (recorded.attempt > 0) {
      metrics.attempt(
        deliveryOutcome(outcome.ok, recorded.final),
        outcome.durationMs,
        recorded.attempt === 1 ? startedAt.getTime() - scheduledFor.getTime() : undefined,
      );
    }
    // attempt 0: the run was no longer Queued (finished by another run of this job).
    if (recorded.attempt === 0 || recorded.final !== null) {
      logger.debug({ cronJobId, runId: run.id, attempt: recorded.attempt, final: recorded.final }, "cron run finished");
      return;
    }
    const delay = retryDelay(config.RETRY_DELAYS_MS, recorded.attempt);
    return runJobAgainAt(job, clock.now().getTime() + delay, token);
  }
}
