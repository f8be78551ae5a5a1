import { createCronJob, parseInput, toCronJobView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { tryQueueOperation } from "../events/queueing.ts";
import { failsWith } from "../middleware/errors.ts";
import { withHistoryView } from "./cron-job-history.ts";
import { cronJobRequestSchemas } from "./schemas.ts";

/**
 * POST /api/cronjobs: commits an Active cron job (the per-organization limit is checked atomically
 * by the lifecycle), then puts its job scheduler on the queue. A queue failure does not fail the
 * request: the job is committed and the reconciler restores its scheduler (contract §6).
 */
export function createCronJobHandler(deps: ApiDeps) {
  const { CreateCronJobSchema } = cronJobRequestSchemas({
    maxPayloadBytes: deps.config.MAX_PAYLOAD_BYTES,
    allowPrivateDestinations: deps.config.ALLOW_PRIVATE_DESTINATIONS,
  });
  return failsWith("Unable to create the cron job", async (req: Request, res: Response) => {
    const input = parseInput(CreateCronJobSchema, req.body);
    const now = deps.clock.now();
    const job = await createCronJob(
      deps.db,
      { orgId: res.locals.orgId, ...input },
      now,
      deps.config.MAX_CRON_JOBS_PER_ORG,
    );
    await tryQueueOperation(res.locals.log, "scheduling the cron job", job.id, () => deps.cronScheduler.schedule(job));
    // A new job has no runs: its history is empty (contract §4).
    res.json(withHistoryView(toCronJobView(job, now, [])));
  });
}
