-- Labels (contract §10.5): up to 10 key to string value pairs an organization puts on its events and
-- cron jobs, to find and cancel them by. Stored as a jsonb object, NULL when there are none, so a
-- column added without a default rewrites no row and most events get no index entry.
--
-- GET /api/events?label=k:v and POST /api/events/cancel select with "labels @> '{"k":"v"}'" beside
-- the organization's filter. The GIN index (jsonb_path_ops: containment only, smaller and faster than
-- the default operator class) answers the containment, and Postgres combines it with an index that
-- leads with org_id (a bitmap AND) or checks org_id on the few rows it returns. It is partial: only
-- labelled events have an entry.
--
-- A flowKey filter lists the events of one flow in the list's order (scheduled_time, id), so its
-- index carries that order after the flow key. Partial too: events outside any flow add nothing.
-- (No semicolon may appear in these comments: the migration runner splits a script at every semicolon.)
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "labels" JSONB;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "labels" JSONB;
CREATE INDEX IF NOT EXISTS "events_labels_idx" ON "events" USING GIN ("labels" jsonb_path_ops) WHERE "labels" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "events_org_id_flow_key_scheduled_time_id_idx" ON "events"("org_id", "flow_key", "scheduled_time", "id") WHERE "flow_key" IS NOT NULL;
