import { get, post, put, request } from "../../api/client.ts";
import type {
  CreateCronJobRequest,
  CronJob,
  CronJobWithHistory,
  CronPreview,
  CronPreviewQuery,
  EditableCronJobStatus,
  UpdateCronJobRequest,
} from "../../api/types.ts";

// The calls of the cron job pages (contract §4, §10.4), with the console's session. The API answers
// the collection as /api/cronjobs, /api/cronJobs and /api/cron-jobs; the console says the last.

const CRON_JOBS = "/api/cron-jobs";
const cronJobPath = (id: string) => `${CRON_JOBS}/${encodeURIComponent(id)}`;

/** Every cron job of the organization, oldest first (no history). */
export const listCronJobs = () => get<CronJob[]>(CRON_JOBS);

/** One cron job with its runs of the last 30 days, newest first. */
export const getCronJob = (id: string) => get<CronJobWithHistory>(cronJobPath(id));

/** Creates an Active cron job. */
export const createCronJob = (body: CreateCronJobRequest) => post<CronJobWithHistory>(CRON_JOBS, body);

/** Changes the fields given (null clears one); the answer is the job as it is now. */
export const editCronJob = (id: string, body: UpdateCronJobRequest) => put<CronJobWithHistory>(cronJobPath(id), body);

/** Disables a job (its runs stop at once) or enables it again (from its next firing). */
export const setCronJobStatus = (id: string, status: EditableCronJobStatus) => editCronJob(id, { status });

/** Deletes a job: its runs stop at once and its history goes with it. */
export const deleteCronJob = async (id: string) => {
  await request("DELETE", cronJobPath(id));
};

/** When a job with this timing would fire, as the scheduler computes it; creates nothing. */
export const previewCronJob = (query: CronPreviewQuery) => get<CronPreview>(`${CRON_JOBS}/preview`, query);
