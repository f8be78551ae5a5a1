import { createCronJobRoute } from "./create-cron-job.ts";
import { deleteCronJobRoute } from "./delete-cron-job.ts";
import { getCronJobRoute } from "./get-cron-job.ts";
import { listCronJobsRoute } from "./list-cron-jobs.ts";
import { updateCronJobRoute } from "./update-cron-job.ts";

/** The collection's path as the routes declare it (and the document shows it). */
export const CRON_JOBS_PATH = "/api/cronjobs";

/**
 * Where the collection and the preview are mounted under /api. The reference writes `/cronjobs`
 * (what `@jiter/node` calls) and once `/cronJobs`; contract §4 makes both answer. The preview is
 * `/cron-jobs/preview` (contract §10.4), so that spelling answers for the whole family too: a client
 * uses one spelling for every cron job path, whichever it is. Express routers already match paths
 * without regard to case, but each spelling is named here so that it keeps working should the app
 * ever turn on `caseSensitive` routing.
 */
export const CRON_JOBS_PATHS = ["/cronjobs", "/cronJobs", "/cron-jobs"];

/** Contract §4: the cron jobs API (alpha), in the order the router tries them and the document lists them. */
export const cronJobRoutes = [
  createCronJobRoute,
  listCronJobsRoute,
  getCronJobRoute,
  updateCronJobRoute,
  deleteCronJobRoute,
];
