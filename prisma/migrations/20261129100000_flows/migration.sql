-- Flows (contract §10.2): a name an organization gives to deliveries that share limits. Events, cron
-- jobs and cron runs name their flow (null: none). A flow's limits and its pause live in "flows",
-- one row per organization and key, written by the API and read by the workers. The counts that
-- enforce the limits (starts in the window, leases in flight) live in Redis.
--
-- Nullable without a default: adding them rewrites no row. (No semicolon may appear in these
-- comments: the migration runner splits a script at every semicolon.)
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "flow_key" TEXT;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "flow_key" TEXT;
ALTER TABLE "cron_runs" ADD COLUMN IF NOT EXISTS "flow_key" TEXT;
CREATE TABLE IF NOT EXISTS "flows" (
  "org_id" TEXT NOT NULL,
  "flow_key" TEXT NOT NULL,
  "rate" INTEGER,
  "period_ms" INTEGER NOT NULL DEFAULT 1000,
  "parallelism" INTEGER,
  "paused" BOOLEAN NOT NULL DEFAULT false,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "flows_pkey" PRIMARY KEY ("org_id", "flow_key"),
  CONSTRAINT "flows_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
