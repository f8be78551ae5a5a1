-- GET /api/stats (console contract, section 3) reads the history of a window from indexes alone.
--
-- Events sent in a window with their due time: the lateness of every event sent at its first
-- attempt comes from this index without reading an attempt. It replaces (org_id, sent_at), whose
-- every use it serves as well.
DROP INDEX "events_org_id_sent_at_idx";
CREATE INDEX "events_org_id_sent_at_scheduled_time_idx" ON "events"("org_id", "sent_at", "scheduled_time");

-- The few attempts the statistics do read, by time: failed ones (retries, failing destinations,
-- first attempts that failed) and successful retries. Partial, so a first attempt that succeeds
-- (the worker's common write) adds no entry to either. Prisma 6's schema language cannot express
-- a partial index or INCLUDE: schema.prisma names them in a comment on EventAttempt, and
-- `prisma migrate dev` would propose dropping them (keep them).
CREATE INDEX "event_attempts_failed_at_idx" ON "event_attempts"("at") INCLUDE ("event_id", "attempt", "error") WHERE "error" IS NOT NULL;
CREATE INDEX "event_attempts_retry_sent_at_idx" ON "event_attempts"("at") INCLUDE ("event_id") WHERE "attempt" > 1 AND "error" IS NULL;
