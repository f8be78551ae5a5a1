-- The worker delivering a Queued cron run (its heartbeat id), as events have it: another worker that
-- gets a copy of the run's firing job (a lock lost while the run was being sent) steps aside while
-- that worker lives. Cleared when an attempt hands the run back for a retry, which any worker may
-- take, and kept once the run ends. Nullable without a default: adding it rewrites no row.
ALTER TABLE "cron_runs" ADD COLUMN "claimed_by" TEXT;
