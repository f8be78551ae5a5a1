-- A cron job's run count (contract §10.4, maxRuns): the runs it has made, Skipped ones aside. The
-- worker adds to it in the transaction that makes the runs, under the job's row lock, so the run
-- that reaches max_runs is the last one whatever the worker, and the count does not depend on the
-- history retention keeps (at most CRON_RUNS_KEPT_PER_JOB runs per job).
--
-- Existing jobs start from the runs they still have. (No semicolon may appear in these comments:
-- the migration runner splits a script at every semicolon.)
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "run_count" INTEGER NOT NULL DEFAULT 0;
UPDATE "cron_jobs" j SET "run_count" = (SELECT count(*) FROM "cron_runs" r WHERE r."cron_job_id" = j."id" AND r."status" <> 'Skipped');
