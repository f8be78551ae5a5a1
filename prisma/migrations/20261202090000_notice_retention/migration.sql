-- Retention of notices: ended notices (Sent or Failed) are deleted by type and age (the events
-- they tell of after the search window, the rest after the history window or with their month's
-- quota counter). Retention finds them by type, oldest first, through this partial index, which
-- holds no Pending notice. It replaces the index on created_at alone, which nothing else reads.
CREATE INDEX IF NOT EXISTS "notifications_ended_idx" ON "notifications"("type", "created_at") WHERE "status" <> 'Pending';
DROP INDEX IF EXISTS "notifications_created_at_idx";
