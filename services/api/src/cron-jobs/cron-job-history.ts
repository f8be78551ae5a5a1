import { type CronJobRecord, type CronJobView, daysBefore, listCronRuns, toCronJobView } from "@punctual/core";
import type { ApiDeps } from "../api-deps.ts";
import type { CronJobWithHistory } from "./schemas.ts";

/**
 * The cron job as get and edit answer it: the record with its runs of the last `HISTORY_DAYS`
 * days, newest first, read from the database. `nextExecutionDate` is computed for `now`.
 */
export async function loadCronJobWithHistory(
  deps: Pick<ApiDeps, "db" | "config">,
  job: CronJobRecord,
  now: Date,
): Promise<CronJobWithHistory> {
  const since = daysBefore(now, deps.config.HISTORY_DAYS);
  const runs = await listCronRuns(deps.db, job.id, since);
  return toCronJobWithHistory(toCronJobView(job, now, runs));
}

/** Narrows a view built with a history (`toCronJobView(job, now, runs)`) to the response type. */
export function toCronJobWithHistory(view: CronJobView): CronJobWithHistory {
  const { history = [], ...record } = view;
  return { ...record, history };
}
