import {
  buildDeliveryRequest,
  type Clock,
  type CronJobData,
  type Logger,
  maxAgeDeadline,
  type ResolvedDeliveryPolicy,
  recordCronRunAttempt,
  releaseCronRunClaim,
  type StartRunResult,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Job } from "bullmq";
import type { AttemptRecorder, RecordedDelivery } from "../delivery/attempt-recorder.ts";
import type { Dispatcher } from "../delivery/dispatcher.ts";
import { type FlowGate, notSentOutcome } from "../delivery/flow-gate.ts";
import { runJobAgainAt } from "../delivery/retry.ts";
import { type AttemptOutcome, originOf } from "../delivery/transport.ts";
import { firstAttemptOf, keepFirstAttempt } from "./firing-jobs.ts";

// One attempt of a cron run this worker owns, the step "Send" of docs/architecture.md ("How a cron
// job's firing is processed"): as an event's attempt, through the flow gate (flow-gate.ts), the same
// request builder and the dispatcher (its organization takes its turn there); recorded, then retried
// on the same schedule as its own job, or ended Sent or Failed To Send. Its lateness and its
// `maxAgeMs` are measured from the jittered time (`sendAt`, contract §10.4).

/** What this worker needs to deliver one run (startCronRun's `started`). */
export type StartedRun = Extract<StartRunResult, { kind: "started" }>["started"];

export interface CronRunSenderDeps {
  db: Db;
  clock: Clock;
  dispatcher: Dispatcher;
  /** Flows' limits and origins' health, before the dispatcher. */
  gate: Pick<FlowGate, "admit">;
  recorder: AttemptRecorder;
  logger: Logger;
  /** This worker's id, the run's owner. */
  self: string;
  /** A buffer job's run ended: the run waiting for it goes (run-waits.ts). */
  wakeBuffered(cronJobId: string): Promise<void>;
}

/** Sends one attempt of the run and records it; its retry, if any, is the job run again at its time. */
export async function sendCronRun(
  deps: CronRunSenderDeps,
  job: Job<CronJobData>,
  cronJobId: string,
  started: StartedRun,
  policy: ResolvedDeliveryPolicy,
  token: string | undefined,
): Promise<void> {
  const { db, clock, dispatcher, gate, recorder, logger, self } = deps;
  const { run, orgId, destination, signingSecret, previousSigningSecret, sendAt } = started;

  const origin = originOf(destination);
  // Its flow's limits and its origin's health first (flow-gate.ts); signed once it may go.
  const admission = await gate.admit({
    orgId,
    origin,
    flowKey: started.flowKey,
    // Its first attempt is due at the jittered time (contract §10.4), its lateness measured from there.
    dueAt: run.attempts === 0 ? sendAt.getTime() : Date.now(),
    timeoutMs: policy.timeoutMs,
    deadline: maxAgeDeadline(policy.retry, sendAt),
  });
  if (admission.kind === "handBack") {
    // Not sent: the run waits in the queue, nobody's, and whichever worker fires it then sends it.
    await releaseCronRunClaim(db, run.id, self, clock.now());
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
    if (started.overlap === "buffer") await deps.wakeBuffered(cronJobId);
    return;
  }
  if (delivery.firstAttemptAt && firstAttemptOf(job) === undefined) {
    await keepFirstAttempt(job, delivery.firstAttemptAt, logger, { cronJobId, runId: run.id });
  }
  return runJobAgainAt(job, settled.retryAt, token);
}
