import {
  CRON_JOB_COMPLETED,
  CRON_JOB_NOT_FOUND,
  type CronJobRecord,
  cronNeverFires,
  FLOW_KEY_INVALID,
  firingTimesDiffer,
  INVALID_EXPRESSION,
  INVALID_TIMEZONE,
  type Logger,
  parseInput,
  REFUSED_DESTINATION_EXAMPLE,
  scheduleOf,
  timingOf,
  updateCronJob,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { POLICY_REFUSALS_WITH_PAYLOAD } from "../delivery-policy/schemas.ts";
import { tryQueueOperation } from "../events/queueing.ts";
import { policyEditOf } from "../events/schemas.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { loadCronJobWithHistory } from "./cron-job-history.ts";
import { CRON_JOB_ID_PARAMETER } from "./get-cron-job.ts";
import { cronJobRequestSchemas, STATUS_ONE_OF, TIMING_FIELD_REFUSALS, TIMING_WHOLE_REFUSALS } from "./schemas.ts";

/**
 * Brings the job's scheduler in line with an edit already committed in Postgres (contract §4,
 * §10.4): Disabled stops the runs at once; Active from Disabled resumes them from the next firing
 * (missed runs are not replayed, as the scheduler starts from now); new firing times of an Active
 * job (expression, interval, an expression's timezone, window) replace the scheduler, effective
 * from its next firing. Payload, destination, maxRuns and the catch-up, overlap and jitter policies
 * need nothing: a firing carries only the job's id and the worker reads the rest when it runs.
 */
async function followEdit(deps: ApiDeps, log: Logger, before: CronJobRecord, after: CronJobRecord) {
  if (after.status === "Disabled") {
    if (before.status === "Active") {
      await tryQueueOperation(log, "removing the disabled cron job's scheduler", after.id, () =>
        deps.cronJobSchedulers.unschedule(after.id),
      );
    }
    return;
  }
  const resumed = before.status === "Disabled";
  const rescheduled = firingTimesDiffer(timingOf(before), timingOf(after));
  if (resumed || rescheduled) {
    await tryQueueOperation(log, "rescheduling the cron job", after.id, () =>
      deps.cronJobSchedulers.schedule(after.id, scheduleOf(after)),
    );
  }
}

/** PUT /api/cronjobs/:cronJobId: edits, disables or enables a cron job; answers with its history. */
export const updateCronJobRoute = defineRoute({
  method: "put",
  path: "/api/cronjobs/{cronJobId}",
  operationId: "editCronJob",
  summary: "Edit, disable or re-activate a cron job",
  description:
    "Changes the fields given. A delivery policy field (contract §10.1) replaces the job's own field; given as " +
    "`null` it is removed, so the organization's default (else the deployment's) applies to the next runs. With " +
    '`body: "raw"` and a JSON `Content-Type` header in the effective policy, the payload must be JSON. A refused ' +
    "edit changes nothing. `flowKey` (contract §10.2) moves the next runs to another flow; `null` takes them out " +
    "of any flow (a run already made keeps the flow it was made in). `labels` (contract §10.5) replaces all of the " +
    "job's labels; `null` (or `{}`) removes them. Timing fields (contract §10.4): a field " +
    "given replaces the job's; `null` clears `startAt`, `endAt`, `maxRuns`, `expression` or `every`. Giving " +
    "`every` to a job with an expression replaces the expression, and the other way round (not both at once). " +
    "The timing after the edit is judged as a whole, as at create. New firing times (expression, interval, " +
    "an expression's timezone, window), or enabling the job, set its schedule again from now: an interval without `startAt` " +
    "then first fires one interval after the edit. A `Completed` job is final: any edit is refused (409).",
  tag: "Cron jobs",
  security: "apiKey",
  parameters: [CRON_JOB_ID_PARAMETER],
  body: { component: "UpdateCronJobRequest", schema: (limits) => cronJobRequestSchemas(limits).UpdateCronJobSchema },
  failure: "Unable to edit the cron job",
  responses: {
    "200": { description: "The updated cron job.", json: "CronJobWithHistory" },
    "400": errorResponse(
      "The body is invalid.",
      STATUS_ONE_OF,
      INVALID_EXPRESSION,
      cronNeverFires("0 0 30 2 *"),
      INVALID_TIMEZONE,
      ...TIMING_FIELD_REFUSALS,
      ...TIMING_WHOLE_REFUSALS,
      REFUSED_DESTINATION_EXAMPLE,
      ...POLICY_REFUSALS_WITH_PAYLOAD,
      FLOW_KEY_INVALID,
    ),
    "404": errorResponse("No such cron job in this organization.", CRON_JOB_NOT_FOUND),
    "409": errorResponse("The cron job is `Completed` (final).", CRON_JOB_COMPLETED),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, UpdateCronJobSchema) => async (req: Request, res: Response) => {
    const changes = parseInput(UpdateCronJobSchema, req.body ?? {});
    const now = deps.clock.now();
    const { before, after } = await updateCronJob(
      deps.db,
      res.locals.orgId,
      String(req.params.cronJobId),
      {
        payload: changes.payload,
        destination: changes.destination,
        timing: {
          expression: changes.expression,
          every: changes.every,
          timezone: changes.timezone,
          startAt: changes.startAt,
          endAt: changes.endAt,
          maxRuns: changes.maxRuns,
          catchUp: changes.catchUp,
          catchUpWindowMs: changes.catchUpWindowMs,
          overlap: changes.overlap,
          jitterMs: changes.jitterMs,
        },
        status: changes.status,
        deliveryPolicy: policyEditOf(changes),
        flowKey: changes.flowKey,
        callbackUrl: changes.callbackUrl,
        labels: changes.labels,
      },
      now,
    );
    await followEdit(deps, res.locals.log, before, after);
    res.json(await loadCronJobWithHistory(deps, after, now));
  },
});
