import { performance } from "node:perf_hooks";
import type { Clock, Config, Logger } from "@punctual/core";
import { daysBefore } from "@punctual/core";
import { type Db, Prisma } from "@punctual/db";

// Retention (contract §8): a daily maintenance task deletes what no client can see any more.
//   - event attempts older than HISTORY_DAYS (GET /events/:id shows 30 days of history);
//   - final cron runs (Sent, Failed To Send, Skipped) created more than HISTORY_DAYS ago (the cron
//     history shows 30 days), and those beyond the newest CRON_RUNS_KEPT_PER_JOB of their job (a run
//     made trims its job's history as it goes: this takes what is left, after the setting was
//     lowered, say). Each job's newest run is kept whatever its age: its catch-up starts from it
//     (contract §10.4), and its run count toward maxRuns is kept on the job, not in the history;
//   - final events past the search window: Sent / Failed To Send / Failed To Queue whose sentAt or
//     failedAt is older than SEARCH_WINDOW_DAYS, Cancelled ones whose scheduledTime and updatedAt
//     both are (their attempts go with them, ON DELETE CASCADE);
//   - monthly usage counters of months that ended more than a year ago;
//   - ended notices (Sent or Failed; outcomes/notices.ts) as what they tell of: an event's outcome
//     (its callback, `event.failed`) once older than SEARCH_WINDOW_DAYS, as the event itself (both
//     are written when it ends); a cron run's, and `destination.*`, once older than HISTORY_DAYS;
//     `quota.*` with their month's usage counter, since each is written once per month and a
//     deleted one would be written again. Pending ones stay, however old, until they end.
// Every statement deletes at most RETENTION_BATCH_SIZE rows and commits on its own, so no lock is
// held for long; rows another transaction has locked are skipped and left for the next run. Between
// two full batches it waits as long as the last one took.
// The monthly quota counters of recent months are never touched: deleting an old event must not
// give its month's unit back (the counter counts what was scheduled, not what is still stored).

/** How long one run may keep deleting; what is left waits for the next run. */
export const DEFAULT_RETENTION_BUDGET_MS = 10 * 60 * 1000;
/** Usage counters are kept for this many whole months before the current one. */
export const USAGE_MONTHS_KEPT = 12;

export interface RetentionDeps {
  db: Db;
  /** Decides the windows; tests move it instead of waiting for days. */
  clock: Clock;
  config: Pick<Config, "HISTORY_DAYS" | "SEARCH_WINDOW_DAYS" | "RETENTION_BATCH_SIZE" | "CRON_RUNS_KEPT_PER_JOB">;
  logger: Logger;
  /** Longest a run keeps starting new batches (real elapsed time, not the clock above). */
  budgetMs?: number;
}

export interface RetentionReport {
  events: number;
  eventAttempts: number;
  cronRuns: number;
  monthlyUsage: number;
  notices: number;
  /** False when the time budget ran out before everything due was deleted. */
  complete: boolean;
}

/** The first day (UTC) of the month `months` months before the month of `now`, as `YYYY-MM-DD`. */
export function monthsBefore(now: Date, months: number): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - months, 1)).toISOString().slice(0, 10);
}

export function createRetention(deps: RetentionDeps) {
  const { db, clock, config, logger } = deps;
  const budgetMs = deps.budgetMs ?? DEFAULT_RETENTION_BUDGET_MS;
  const batch = config.RETENTION_BATCH_SIZE;

  /**
   * The deletions, in order. Events come first so that their attempts leave with them (one cascade)
   * rather than being found again by the attempts' own pass.
   *
   * The events statements also bound `scheduled_time`: an event is sent or fails only at or after
   * its time, so the bound drops nothing, and it lets the (status, scheduled_time) index find the
   * rows. (Were a worker's clock behind, such an event would only wait for a later run.)
   */
  function statements(now: Date): { kind: keyof Omit<RetentionReport, "complete">; sql: Prisma.Sql }[] {
    const searchCutoff = daysBefore(now, config.SEARCH_WINDOW_DAYS);
    const historyCutoff = daysBefore(now, config.HISTORY_DAYS);
    const oldestMonthKept = monthsBefore(now, USAGE_MONTHS_KEPT);
    return [
      {
        kind: "events",
        sql: Prisma.sql`
          DELETE FROM events WHERE id IN (
            SELECT id FROM events
            WHERE status = 'Sent' AND scheduled_time < ${searchCutoff} AND sent_at < ${searchCutoff}
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
      {
        kind: "events",
        sql: Prisma.sql`
          DELETE FROM events WHERE id IN (
            SELECT id FROM events
            WHERE status IN ('Failed To Send', 'Failed To Queue')
              AND scheduled_time < ${searchCutoff} AND failed_at < ${searchCutoff}
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
      {
        kind: "events",
        sql: Prisma.sql`
          DELETE FROM events WHERE id IN (
            SELECT id FROM events
            WHERE status = 'Cancelled' AND scheduled_time < ${searchCutoff} AND updated_at < ${searchCutoff}
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
      {
        kind: "eventAttempts",
        sql: Prisma.sql`
          DELETE FROM event_attempts WHERE id IN (
            SELECT id FROM event_attempts WHERE at < ${historyCutoff}
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
      {
        kind: "cronRuns",
        sql: Prisma.sql`
          DELETE FROM cron_runs WHERE id IN (
            SELECT r.id FROM cron_runs r
            WHERE r.status IN ('Sent', 'Failed To Send', 'Skipped') AND r.created_at < ${historyCutoff}
              AND EXISTS (SELECT 1 FROM cron_runs newer
                WHERE newer.cron_job_id = r.cron_job_id AND newer.scheduled_for > r.scheduled_for)
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
      {
        kind: "cronRuns",
        // The jobs over the cap (one pass over the index of job and time), then each one's runs beyond it.
        sql: Prisma.sql`
          DELETE FROM cron_runs WHERE id IN (
            SELECT beyond.id FROM (
              SELECT cron_job_id FROM cron_runs GROUP BY cron_job_id HAVING count(*) > ${config.CRON_RUNS_KEPT_PER_JOB}
            ) AS over
            CROSS JOIN LATERAL (
              SELECT r.id, r.status FROM cron_runs r WHERE r.cron_job_id = over.cron_job_id
              ORDER BY r.scheduled_for DESC OFFSET ${config.CRON_RUNS_KEPT_PER_JOB}
            ) AS beyond
            WHERE beyond.status <> 'Queued'
            LIMIT ${batch})`,
      },
      ...[
        { types: ["event.sent", "event.failed"], before: searchCutoff },
        { types: ["cron.run.sent", "cron.run.failed"], before: historyCutoff },
        { types: ["destination.unhealthy", "destination.healthy"], before: historyCutoff },
      ].map(({ types, before }) => ({
        kind: "notices" as const,
        sql: Prisma.sql`
          DELETE FROM notifications WHERE id IN (
            SELECT id FROM notifications
            WHERE type = ANY(${types}::text[]) AND status <> 'Pending' AND created_at < ${before}
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      })),
      {
        kind: "notices",
        // The subject of a quota notice is `<org id>:<YYYY-MM>`. A month's notices are written before it
        // ends (nothing is scheduled in the past), so those of a month before the oldest kept month were
        // written before that one began: the bound on created_at drops none and lets the index find them.
        sql: Prisma.sql`
          DELETE FROM notifications WHERE id IN (
            SELECT id FROM notifications
            WHERE type = ANY(${["quota.warning", "quota.reached"]}::text[]) AND status <> 'Pending'
              AND created_at < ${new Date(`${oldestMonthKept}T00:00:00.000Z`)}
              AND right(subject_id, 7) COLLATE "C" < ${oldestMonthKept.slice(0, 7)}
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
      {
        kind: "monthlyUsage",
        sql: Prisma.sql`
          DELETE FROM event_monthly_usage WHERE (org_id, month) IN (
            SELECT org_id, month FROM event_monthly_usage WHERE month < ${oldestMonthKept}::date
            LIMIT ${batch} FOR UPDATE SKIP LOCKED)`,
      },
    ];
  }

  /** One run: every kind in turn, batch after batch, until none is left or the budget is used. */
  return async function retain(pause: () => Promise<void> = () => Promise.resolve()): Promise<RetentionReport> {
    const now = clock.now();
    const deadline = performance.now() + budgetMs;
    const report: RetentionReport = {
      events: 0,
      eventAttempts: 0,
      cronRuns: 0,
      monthlyUsage: 0,
      notices: 0,
      complete: true,
    };
    for (const { kind, sql } of statements(now)) {
      for (;;) {
        if (performance.now() >= deadline) {
          report.complete = false;
          break;
        }
        await pause();
        // One statement, one implicit transaction: its locks last as long as one batch.
        const started = performance.now();
        const deleted = await db.$executeRaw(sql);
        report[kind] += deleted;
        if (deleted < batch) break;
        // Then a pause as long as the batch took: retention takes at most half of Postgres's time
        // and leaves the rest to the creates and deliveries beside it (back to back, a run over a
        // day of 5,000,000 events cut the API's creates/s to 74 %).
        await new Promise((resolve) => setTimeout(resolve, performance.now() - started));
      }
      if (!report.complete) break;
    }
    const total = report.events + report.eventAttempts + report.cronRuns + report.monthlyUsage + report.notices;
    if (total > 0 || !report.complete) logger.info(report, "retention deleted old records");
    return report;
  };
}
