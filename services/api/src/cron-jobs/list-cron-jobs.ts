import { listCronJobs, toCronJobView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { failsWith } from "../middleware/errors.ts";
import type { CronJob } from "./schemas.ts";

/**
 * GET /api/cronjobs: every cron job of the organization, oldest first, without `history`. There is
 * no page size: an organization has at most `MAX_CRON_JOBS_PER_ORG` of them.
 */
export function listCronJobsHandler(deps: ApiDeps) {
  return failsWith("Unable to retrieve cron jobs", async (_req: Request, res: Response) => {
    const now = deps.clock.now();
    const jobs = await listCronJobs(deps.db, res.locals.orgId);
    const body: CronJob[] = jobs.map((job) => toCronJobView(job, now));
    res.json(body);
  });
}
