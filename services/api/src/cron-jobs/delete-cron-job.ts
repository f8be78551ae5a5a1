import { CRON_JOB_NOT_FOUND, deleteCronJob } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { tryQueueOperation } from "../events/queueing.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";
import { CRON_JOB_ID_PARAMETER } from "./get-cron-job.ts";

/**
 * DELETE /api/cronjobs/:cronJobId: deletes the job with its history (it stops counting toward the
 * limit), then removes its scheduler. Should that removal fail, a leftover firing finds no job and
 * delivers nothing.
 */
export const deleteCronJobRoute = defineRoute({
  method: "delete",
  path: "/api/cronjobs/{cronJobId}",
  operationId: "deleteCronJob",
  summary: "Delete a cron job",
  description: "The schedule stops at once; the job's history goes with it.",
  tag: "Cron jobs",
  security: "apiKey",
  parameters: [CRON_JOB_ID_PARAMETER],
  failure: "Unable to delete the cron job",
  responses: {
    "204": { description: "Deleted." },
    "404": errorResponse("No such cron job in this organization.", CRON_JOB_NOT_FOUND),
  },
  handler: (deps: ApiDeps) => async (req: Request, res: Response) => {
    const cronJobId = String(req.params.cronJobId);
    await deleteCronJob(deps.db, res.locals.orgId, cronJobId);
    await tryQueueOperation(res.locals.log, "removing the deleted cron job's scheduler", cronJobId, () =>
      deps.cronJobSchedulers.unschedule(cronJobId),
    );
    res.status(204).end();
  },
});
