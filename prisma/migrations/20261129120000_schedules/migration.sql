-- Complete recurring schedules (contract §10.4). A cron job fires by its expression (five fields, or
-- six with seconds first) or every fixed interval ("every", an ISO 8601 duration as given, with
-- every_ms its length), only inside [start_at, end_at], at most max_runs times. Its catch-up,
-- overlap and jitter policies say what happens to missed firings, to a firing while the previous run
-- is undecided, and how far each run is spread after its firing. schedule_since is when the
-- schedule last changed (creation, an edit of its timing, or enabling it): no firing before it is
-- ever caught up. A job that ran its max_runs or passed its end_at is "Completed". A run may be
-- "Skipped" (overlap skip).
--
-- Existing jobs keep their behaviour: expression set, every null, no window, catch_up 'skip',
-- overlap 'allow', no jitter. (No semicolon may appear in these comments: the migration runner
-- splits a script at every semicolon.)
ALTER TABLE "cron_jobs" ALTER COLUMN "expression" DROP NOT NULL;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "every" TEXT;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "every_ms" BIGINT;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "start_at" TIMESTAMPTZ(3);
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "end_at" TIMESTAMPTZ(3);
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "max_runs" INTEGER;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "catch_up" TEXT NOT NULL DEFAULT 'skip';
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "catch_up_window_ms" INTEGER NOT NULL DEFAULT 3600000;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "overlap" TEXT NOT NULL DEFAULT 'allow';
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "jitter_ms" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "schedule_since" TIMESTAMPTZ(3);
