import { type CronJobRecord, type Logger, parseInput, updateCronJob } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { tryQueueOperation } from "../events/queueing.ts";
import { failsWith } from "../middleware/errors.ts";
import { withHistory } from "./cron-job-history.ts";
import { cronJobRequestSchemas } from "./schemas.ts";

/**
 * Brings the job's scheduler in line with an edit already committed in Postgres (contract §4):
 * Disabled stops the runs at once; Active from Disabled resumes them from the next matching time
 * (missed runs are not replayed, as the scheduler starts from now); a new expression or timezone of
 * an Active job replaces the scheduler, effective from its next run. Payload and destination need
 * nothing: a firing carries only the job's id and the worker reads the rest when it runs.
 */
async function followEdit(deps: ApiDeps, log: Logger, before: CronJobRecord, after: CronJobRecord) {
  if (after.status === "Disabled") {
    if (before.status === "Active") {
      await tryQueueOperation(log, "removing the disabled cron job's scheduler", after.id, () =>
        deps.cronScheduler.unschedule(after.id),
      );
    }
    return;
  }
  const resumed = before.status === "Disabled";
  const rescheduled = before.expression !== after.expression || before.timezone !== after.timezone;
  if (resumed || rescheduled) {
    await tryQueueOperation(log, "rescheduling the cron job", after.id, () => deps.cronScheduler.schedule(after));
  }
}

/** PUT /api/cronjobs/:cronJobId: edits, disables or enables a cron job; answers with its history. */
export function updateCronJobHandler(deps: ApiDeps) {
  const { UpdateCronJobSchema } = cronJobRequestSchemas({
    maxPayloadBytes: deps.config.MAX_PAYLOAD_BYTES,
    allowPrivateDestinations: deps.config.ALLOW_PRIVATE_DESTINATIONS,
  });
  return failsWith("Unable to edit the cron job", async (req: Request, res: Response) => {
    const changes = parseInput(UpdateCronJobSchema, req.body ?? {});
    const now = deps.clock.now();
    const { before, after } = await updateCronJob(
      deps.db,
      res.locals.orgId,
      String(req.params.cronJobId),
      changes,
      now,
    );
    await followEdit(deps, res.locals.log, before, after);
    res.json(await withHistory(deps, after, now));
  });
}
