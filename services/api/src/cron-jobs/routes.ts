import { Router } from "express";
import type { ApiDeps } from "../app.ts";
import { createCronJobHandler } from "./create-cron-job.ts";
import { deleteCronJobHandler } from "./delete-cron-job.ts";
import { getCronJobHandler } from "./get-cron-job.ts";
import { listCronJobsHandler } from "./list-cron-jobs.ts";
import { updateCronJobHandler } from "./update-cron-job.ts";

/**
 * Where the collection is mounted. The reference writes `/cronjobs` (what `@jiter/node` calls) and
 * once `/cronJobs`; contract §4 makes both answer. Express routers already match paths without
 * regard to case, but both spellings are named here so that they keep working should the app ever
 * turn on `caseSensitive` routing.
 */
export const CRON_JOBS_PATHS = ["/cronjobs", "/cronJobs"];

/** Contract §4: the cron jobs API (alpha), mounted at /api/cronjobs behind the API key check. */
export function cronJobRoutes(deps: ApiDeps): Router {
  const router = Router();
  router.post("/", createCronJobHandler(deps));
  router.get("/", listCronJobsHandler(deps));
  router.get("/:cronJobId", getCronJobHandler(deps));
  router.put("/:cronJobId", updateCronJobHandler(deps));
  router.delete("/:cronJobId", deleteCronJobHandler(deps));
  return router;
}
