import { deleteCronJob } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { tryQueueOperation } from "../events/queueing.ts";
import { failsWith } from "../middleware/errors.ts";

/**
 * DELETE /api/cronjobs/:cronJobId: deletes the job with its history (it stops counting toward the
 * limit), then removes its scheduler. Should that removal fail, a leftover firing finds no job and
 * delivers nothing.
 */
export function deleteCronJobHandler(deps: ApiDeps) {
  return failsWith("Unable to delete the cron job", async (req: Request, res: Response) => {
    const cronJobId = String(req.params.cronJobId);
    await deleteCronJob(deps.db, res.locals.orgId, cronJobId);
    await tryQueueOperation(res.locals.log, "removing the deleted cron job's scheduler", cronJobId, () =>
      deps.cronScheduler.unschedule(cronJobId),
    );
    res.status(204).end();
  });
}
