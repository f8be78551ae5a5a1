-- GET /api/events?label=k:v reads one page in the list's order (scheduled_time, id) however many
-- events carry the label. The GIN index on labels answers containment but not order: a page cost
-- every matching event read and sorted (a campaign of 50,000 meant 50,000 rows for 1,000). A btree
-- cannot index the several pairs of one jsonb object, so each label of an event is a row of
-- event_labels, keyed in the list's order after the label: (org_id, key, value, scheduled_time,
-- event_id). A page walks that key from the cursor and stops at its size.
--
-- The table is an index the database keeps: triggers on events write it, so every path that writes
-- events (creates, batches, replays, cron firings, edits, retention, an organization's deletion)
-- keeps it true without knowing of it. Inserts and deletes are handled per statement (one set-based
-- statement for a batch of 1,000), an edit per row and only when its labels or scheduled time
-- changed: a claim or an attempt's record (which set neither column) never fires it.
-- The GIN index stays: POST /api/events/cancel and several labels at once test containment.
-- The table is no model of prisma/schema.prisma (only raw SQL reads it, and triggers write it): a
-- migration that prisma migrate dev proposes must not drop it.
-- (No semicolon may appear in these comments: the migration runner splits a script at every semicolon.)
CREATE TABLE IF NOT EXISTS "event_labels" (
  "org_id" TEXT NOT NULL,
  "key" TEXT NOT NULL,
  "value" TEXT NOT NULL,
  "scheduled_time" TIMESTAMPTZ(3) NOT NULL,
  "event_id" TEXT NOT NULL,
  CONSTRAINT "event_labels_pkey" PRIMARY KEY ("org_id", "key", "value", "scheduled_time", "event_id")
);
-- Deletes and edits find an event's rows by its id.
CREATE INDEX IF NOT EXISTS "event_labels_event_id_idx" ON "event_labels"("event_id");

-- The labels of events that exist before this migration.
INSERT INTO "event_labels" ("org_id", "key", "value", "scheduled_time", "event_id")
SELECT e."org_id", l."key", l."value", e."scheduled_time", e."id"
FROM "events" e CROSS JOIN LATERAL jsonb_each_text(e."labels") AS l("key", "value")
WHERE e."labels" IS NOT NULL
ON CONFLICT DO NOTHING;

-- The bodies are E'' strings with their semicolons written \073: the migration runner splits a
-- script at every semicolon, even inside a quoted body.
CREATE OR REPLACE FUNCTION "event_labels_inserted"() RETURNS trigger LANGUAGE plpgsql AS
  E'BEGIN\n  INSERT INTO event_labels (org_id, key, value, scheduled_time, event_id)\n  SELECT n.org_id, l.key, l.value, n.scheduled_time, n.id\n  FROM new_events n CROSS JOIN LATERAL jsonb_each_text(n.labels) AS l(key, value)\n  WHERE n.labels IS NOT NULL\n  ON CONFLICT DO NOTHING\073\n  RETURN NULL\073\nEND';

CREATE OR REPLACE FUNCTION "event_labels_deleted"() RETURNS trigger LANGUAGE plpgsql AS
  E'BEGIN\n  DELETE FROM event_labels x USING old_events o\n  WHERE o.labels IS NOT NULL AND x.event_id = o.id\073\n  RETURN NULL\073\nEND';

CREATE OR REPLACE FUNCTION "event_labels_changed"() RETURNS trigger LANGUAGE plpgsql AS
  E'BEGIN\n  DELETE FROM event_labels WHERE event_id = OLD.id\073\n  INSERT INTO event_labels (org_id, key, value, scheduled_time, event_id)\n  SELECT NEW.org_id, l.key, l.value, NEW.scheduled_time, NEW.id\n  FROM jsonb_each_text(NEW.labels) AS l(key, value)\n  WHERE NEW.labels IS NOT NULL\n  ON CONFLICT DO NOTHING\073\n  RETURN NULL\073\nEND';

DROP TRIGGER IF EXISTS "event_labels_inserted" ON "events";
CREATE TRIGGER "event_labels_inserted" AFTER INSERT ON "events"
  REFERENCING NEW TABLE AS "new_events" FOR EACH STATEMENT EXECUTE FUNCTION "event_labels_inserted"();
DROP TRIGGER IF EXISTS "event_labels_deleted" ON "events";
CREATE TRIGGER "event_labels_deleted" AFTER DELETE ON "events"
  REFERENCING OLD TABLE AS "old_events" FOR EACH STATEMENT EXECUTE FUNCTION "event_labels_deleted"();
DROP TRIGGER IF EXISTS "event_labels_changed" ON "events";
CREATE TRIGGER "event_labels_changed" AFTER UPDATE OF "labels", "scheduled_time", "org_id" ON "events"
  FOR EACH ROW
  WHEN (OLD."labels" IS DISTINCT FROM NEW."labels" OR OLD."scheduled_time" IS DISTINCT FROM NEW."scheduled_time" OR OLD."org_id" IS DISTINCT FROM NEW."org_id")
  EXECUTE FUNCTION "event_labels_changed"();
