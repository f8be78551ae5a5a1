import {
  badRequest,
  type CronJobTiming,
  createCronJob,
  cronNeverFires,
  DEFAULT_CATCH_UP_WINDOW_MS,
  FLOW_KEY_INVALID,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  parseInput,
  REFUSED_DESTINATION_EXAMPLE,
  scheduleOf,
  timingProblem,
  toCronJobView,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { POLICY_REFUSALS_WITH_PAYLOAD } from "../delivery-policy/schemas.ts";
import { tryQueueOperation } from "../events/queueing.ts";
import { DESTINATION_URL, payloadTooLong } from "../events/schemas.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { toCronJobWithHistory } from "./cron-job-history.ts";
import { cronJobRequestSchemas, TIMING_FIELD_REFUSALS, TIMING_WHOLE_REFUSALS } from "./schemas.ts";

/**
 * POST /api/cronjobs: judges the timing as a whole (contract §10.4: a window that fires), commits an
 * Active cron job (the per-organization limit is checked atomically by the lifecycle), then puts its
 * job scheduler on the queue. A queue failure does not fail the request: the job is committed and
 * the reconciler restores its scheduler (contract §6).
 */
export const createCronJobRoute = defineRoute({
  method: "post",
  path: "/api/cronjobs",
  operationId: "createCronJob",
  summary: "Create a cron job",
  description:
    "The collection also answers as `/api/cronJobs`. The optional delivery policy fields (contract §10.1) are " +
    "the job's own; each run takes them over the organization's default policy as it is when the run is " +
    "created, so a later change of the default reaches the next runs. Every answer shows the effective values " +
    '(the job\'s own fields over the current default), sensitive header values as `"[redacted]"`. The optional ' +
    "`flowKey` (contract §10.2) puts its runs in a flow of the organization, whose limits and pause hold them back. " +
    "The optional `labels` (contract §10.5) are kept on the job and shown in its record. " +
    "The timing (contract §10.4): exactly one of `expression` (five fields, or six with seconds first) and `every` " +
    "(an ISO 8601 interval); optionally a window (`startAt`, `endAt`), a number of runs (`maxRuns`; after the last " +
    "the job is `Completed`), what happens to missed firings (`catchUp`, `catchUpWindowMs`) and to a firing while " +
    "the previous run is undecided (`overlap`), and a spread of each run after its firing (`jitterMs`).",
  tag: "Cron jobs",
  security: "apiKey",
  body: { component: "CreateCronJobRequest", schema: (limits) => cronJobRequestSchemas(limits).CreateCronJobSchema },
  failure: "Unable to create the cron job",
  responses: {
    "200": { description: "The new cron job, `Active`, with an empty history.", json: "CronJobWithHistory" },
    "400": errorResponse(
      "The body is invalid.",
      INVALID_EXPRESSION,
      cronNeverFires("0 0 30 2 *"),
      INVALID_TIMEZONE,
      ...TIMING_FIELD_REFUSALS,
      ...TIMING_WHOLE_REFUSALS,
      payloadTooLong,
      DESTINATION_URL,
      REFUSED_DESTINATION_EXAMPLE,
      ...POLICY_REFUSALS_WITH_PAYLOAD,
      FLOW_KEY_INVALID,
    ),
    "403": errorResponse(
      "The organization has reached its cron job limit.",
      (config) => `Cron job limit of ${config.MAX_CRON_JOBS_PER_ORG} reached for this organization`,
    ),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, CreateCronJobSchema) => async (req: Request, res: Response) => {
    const {
      payload,
      destination,
      expression,
      timezone,
      every,
      startAt,
      endAt,
      maxRuns,
      catchUp,
      catchUpWindowMs,
      overlap,
      jitterMs,
      flowKey,
      callbackUrl,
      labels,
      ...deliveryPolicy
    } = parseInput(CreateCronJobSchema, req.body);
    const now = deps.clock.now();
    const timing: CronJobTiming = {
      expression: expression ?? null,
      timezone,
      every: every ?? null,
      startAt: startAt ?? null,
      endAt: endAt ?? null,
      maxRuns: maxRuns ?? null,
      catchUp: catchUp ?? "skip",
      catchUpWindowMs: catchUpWindowMs ?? DEFAULT_CATCH_UP_WINDOW_MS,
      overlap: overlap ?? "allow",
      jitterMs: jitterMs ?? 0,
    };
    // A new job's schedule is set now: an interval without startAt first fires one interval after now.
    const problem = timingProblem(timing, now, now);
    if (problem) throw badRequest(problem.message);
    const job = await createCronJob(
      deps.db,
      { orgId: res.locals.orgId, payload, destination, ...timing, deliveryPolicy, flowKey, callbackUrl, labels },
      now,
      deps.config.MAX_CRON_JOBS_PER_ORG,
    );
    await tryQueueOperation(res.locals.log, "scheduling the cron job", job.id, () =>
      deps.cronJobSchedulers.schedule(job.id, scheduleOf(job)),
    );
    // A new job has no runs: its history is empty (contract §4).
    res.json(toCronJobWithHistory(toCronJobView(job, now, []), job, deps.config));
  },
});
