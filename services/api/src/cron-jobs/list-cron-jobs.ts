import { listCronJobs } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { defineRoute } from "../routing/route.ts";
import { toCronJob } from "./cron-job-history.ts";
import type { CronJob } from "./schemas.ts";

/**
 * GET /api/cronjobs: every cron job of the organization, oldest first, without `history`. There is
 * no page size: an organization has at most `MAX_CRON_JOBS_PER_ORG` of them.
 */
export const listCronJobsRoute = defineRoute({
  method: "get",
  path: "/api/cronjobs",
  operationId: "getManyCronJobs",
  summary: "List cron jobs",
  description:
    "Every cron job of the organization, oldest first, without history. Every cron job path also " +
    "answers as `/api/cronJobs/…` and `/api/cron-jobs/…`.",
  tag: "Cron jobs",
  security: "apiKey",
  failure: "Unable to retrieve cron jobs",
  responses: {
    "200": { description: "The cron jobs.", json: { type: "array", items: { $ref: "#/components/schemas/CronJob" } } },
  },
  handler: (deps: ApiDeps) => async (_req: Request, res: Response) => {
    const now = deps.clock.now();
    const jobs = await listCronJobs(deps.db, res.locals.orgId);
    const body: CronJob[] = jobs.map((job) => toCronJob(job, now, deps.config));
    res.json(body);
  },
});
