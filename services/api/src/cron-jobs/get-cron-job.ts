import { CRON_JOB_NOT_FOUND, findCronJob, notFound } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { pathParameter } from "../routing/parameters.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";
import { loadCronJobWithHistory } from "./cron-job-history.ts";

export const CRON_JOB_ID_PARAMETER = pathParameter("cronJobId", "The cron job's id (`cron_…`)");

/**
 * GET /api/cronjobs/:cronJobId: the cron job with its runs of the last `HISTORY_DAYS` days, newest
 * first. Another organization's job is answered exactly like a missing one.
 */
export const getCronJobRoute = defineRoute({
  method: "get",
  path: "/api/cronjobs/{cronJobId}",
  operationId: "getCronJob",
  summary: "Get a cron job with its run history",
  tag: "Cron jobs",
  security: "apiKey",
  parameters: [CRON_JOB_ID_PARAMETER],
  failure: "An error occurred finding the cron job",
  responses: {
    "200": {
      description: (config) => `The cron job and its runs of the last ${config.HISTORY_DAYS} days, newest first.`,
      json: "CronJobWithHistory",
    },
    "404": errorResponse("No such cron job in this organization.", CRON_JOB_NOT_FOUND),
  },
  handler: (deps: ApiDeps) => async (req: Request, res: Response) => {
    const now = deps.clock.now();
    const job = await findCronJob(deps.db, res.locals.orgId, String(req.params.cronJobId));
    if (!job) throw notFound(CRON_JOB_NOT_FOUND);
    res.json(await loadCronJobWithHistory(deps, job, now));
  },
});
