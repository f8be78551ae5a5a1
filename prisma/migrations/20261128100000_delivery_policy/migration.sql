-- Delivery policies (contract §10.1): how a delivery is sent (method, headers, body, timeout) and
-- retried. Each event, cron job and cron run keeps the policy it was created with, as JSON holding
-- only the fields its client or its organization's default set. An organization keeps its default.
-- Null everywhere means the deployment's defaults, the behaviour of every existing row.
--
-- Nullable without a default: adding them rewrites no row. (No semicolon may appear in these
-- comments: the migration runner splits a script at every semicolon.)
ALTER TABLE "organizations" ADD COLUMN IF NOT EXISTS "delivery_policy" JSONB;
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "delivery_policy" JSONB;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "delivery_policy" JSONB;
ALTER TABLE "cron_runs" ADD COLUMN IF NOT EXISTS "delivery_policy" JSONB;
