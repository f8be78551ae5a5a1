-- GET /api/stats reads one organization's failed attempts and successful retries by time. Attempts
-- had no organization, so those reads went through every organization's failures in the window
-- and kept the caller's afterwards: one organization's statistics cost more the more another's
-- deliveries failed. The attempts the statistics read now carry their event's organization, and
-- their two partial indexes start with it.
--
-- Nullable without a default: adding it rewrites no row.
ALTER TABLE "event_attempts" ADD COLUMN IF NOT EXISTS "org_id" TEXT;

-- Filled in Postgres, from the event, for the attempts the statistics read (failed ones and retries),
-- so that attempts recorded by any version of the worker have it, also during a rolling upgrade.
-- The WHEN clause is checked before the function is called: a first attempt that succeeds (the
-- worker's common write) runs no function and keeps a null. A failed attempt or retry looks its
-- event up by primary key, a row its own statement has just read.
-- The body is an E'' string with its semicolons written \073: the migration runner splits a script
-- at every semicolon, even inside a quoted body.
CREATE OR REPLACE FUNCTION "event_attempts_org_id"() RETURNS trigger LANGUAGE plpgsql AS
  E'BEGIN\n  SELECT org_id INTO NEW.org_id FROM events WHERE id = NEW.event_id\073\n  RETURN NEW\073\nEND';

CREATE OR REPLACE TRIGGER "event_attempts_org_id" BEFORE INSERT ON "event_attempts"
  FOR EACH ROW WHEN (NEW."org_id" IS NULL AND (NEW."error" IS NOT NULL OR NEW."attempt" > 1))
  EXECUTE FUNCTION "event_attempts_org_id"();

-- The attempts recorded before the trigger existed.
UPDATE "event_attempts" AS a SET "org_id" = e."org_id"
FROM "events" AS e
WHERE e."id" = a."event_id" AND (a."error" IS NOT NULL OR a."attempt" > 1) AND a."org_id" IS NULL;

-- They replace the two indexes of migration 20261123130100_stats_indexes, dropped once the new ones
-- are there: an API of the earlier version reads those until it stops. Built as the other indexes
-- of these migrations are (not CONCURRENTLY, which `prisma migrate dev` cannot apply): attempts
-- wait while each is built, which reads the whole table but writes only its failed attempts or
-- retries.
CREATE INDEX IF NOT EXISTS "event_attempts_org_id_failed_at_idx" ON "event_attempts"("org_id", "at") INCLUDE ("event_id", "attempt", "error") WHERE "error" IS NOT NULL;
CREATE INDEX IF NOT EXISTS "event_attempts_org_id_retry_sent_at_idx" ON "event_attempts"("org_id", "at") INCLUDE ("event_id") WHERE "attempt" > 1 AND "error" IS NULL;
DROP INDEX IF EXISTS "event_attempts_failed_at_idx";
DROP INDEX IF EXISTS "event_attempts_retry_sent_at_idx";
