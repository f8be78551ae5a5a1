import { CRON_JOB_NOT_FOUND, findCronJob, notFound } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { failsWith } from "../middleware/errors.ts";
import { withHistory } from "./cron-job-history.ts";

/**
 * GET /api/cronjobs/:cronJobId: the cron job with its runs of the last `HISTORY_DAYS` days, newest
 * first. Another organization's job is answered exactly like a missing one.
 */
export function getCronJobHandler(deps: ApiDeps) {
  return failsWith("An error occurred finding the cron job", async (req: Request, res: Response) => {
    const now = deps.clock.now();
    const job = await findCronJob(deps.db, res.locals.orgId, String(req.params.cronJobId));
    if (!job) throw notFound(CRON_JOB_NOT_FOUND);
    res.json(await withHistory(deps, job, now));
  });
}
