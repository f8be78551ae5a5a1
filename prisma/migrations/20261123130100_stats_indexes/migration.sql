-- GET /api/stats (console contract, section 3) reads the failed attempts of a window: retried
-- attempts and the destinations failing most. They are a few percent of all attempts. This partial
-- index holds only them, with what the statistics need, so the window is one short index range and
-- a successful attempt (the worker's common write) costs no entry here.
-- Prisma 6's schema language cannot express a partial index or INCLUDE: schema.prisma names it in
-- a comment on EventAttempt, and `prisma migrate dev` would propose dropping it (keep it).
CREATE INDEX "event_attempts_failed_at_idx" ON "event_attempts"("at") INCLUDE ("event_id", "attempt") WHERE "error" IS NOT NULL;
