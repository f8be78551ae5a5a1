import {
  type CronJobView,
  type CronJobWithPolicy,
  daysBefore,
  listCronRuns,
  readCallbacks,
  toCronJobView,
} from "@punctual/core";
import type { ApiDeps } from "../api-deps.ts";
import { withCronJobPolicy } from "../delivery-policy/policy-views.ts";
import type { CronJob, CronJobWithHistory } from "./schemas.ts";

/**
 * The cron job as get and edit answer it: the record with its runs of the last `HISTORY_DAYS`
 * days, newest first, read from the database, each ended run with its callback once written.
 * `nextExecutionDate` is computed for `now`.
 */
export async function loadCronJobWithHistory(
  deps: Pick<ApiDeps, "db" | "config">,
  job: CronJobWithPolicy,
  now: Date,
): Promise<CronJobWithHistory> {
  const since = daysBefore(now, deps.config.HISTORY_DAYS);
  const runs = await listCronRuns(deps.db, job.id, since);
  // Whatever the job's callbackUrl is now: a run's callback went to the one it had when the run ended.
  const callbacks = await readCallbacks(
    deps.db,
    runs.filter((run) => ENDED.has(run.status)).map((run) => run.id),
  );
  const record = toCronJobWithHistory(toCronJobView(job, now, runs), job, deps.config);
  return {
    ...record,
    history: record.history.map((run) => {
      const callback = callbacks.get(run.id);
      return callback ? { ...run, callback } : run;
    }),
  };
}

/** The run statuses that make a callback (Skipped runs were never sent). */
const ENDED: ReadonlySet<string> = new Set(["Sent", "Failed To Send"]);

/** A cron job as the list answers it: without history, with its effective delivery policy. */
export function toCronJob(job: CronJobWithPolicy, now: Date, config: ApiDeps["config"]): CronJob {
  return withCronJobPolicy(toCronJobView(job, now), job, config);
}

/**
 * Narrows a view built with a history (`toCronJobView(job, now, runs)`) to the response type, with
 * the job's effective delivery policy.
 */
export function toCronJobWithHistory(
  view: CronJobView,
  job: CronJobWithPolicy,
  config: ApiDeps["config"],
): CronJobWithHistory {
  const { history = [], ...record } = view;
  return { ...withCronJobPolicy(record, job, config), history };
}
