-- The first 1024 bytes of the receiver's answer to each event attempt, as a cron run keeps its
-- responseData: an attempt that failed with a 404 then shows what the receiver said.
--
-- Nullable without a default: adding it rewrites no row, and attempts recorded before it (or by a
-- worker of an earlier version during a rolling upgrade) simply have none.
ALTER TABLE "event_attempts" ADD COLUMN IF NOT EXISTS "response_body" TEXT;
