-- Three indexes of the events table only ever answer for rows with a value in their column: failed
-- events by failure time (the failedAt filters of GET /api/events, failure notices, retention), the
-- replays of an event (the check of bulk replay), and idempotency keys (a repeated create, and the
-- uniqueness of a key). Every query using them compares the column with =, < or >, which no NULL
-- satisfies, so each can be partial. Most events have none of the three values: with partial indexes
-- they get no entry in them when an event is created, claimed (Pending to Queued) or recorded Sent.
-- The claim and the record change the indexed status, so without this each added an entry to every
-- index of the table (docs/decisions.md, "Partial indexes on events").
-- The schema language of Prisma 6 cannot express a partial index: schema.prisma names them in a
-- comment on Event, and prisma migrate dev would propose making them whole again (keep them).
DROP INDEX "events_org_id_failed_at_idx";
CREATE INDEX "events_org_id_failed_at_idx" ON "events"("org_id", "failed_at") WHERE "failed_at" IS NOT NULL;

DROP INDEX "events_replay_of_idx";
CREATE INDEX "events_replay_of_idx" ON "events"("replay_of") WHERE "replay_of" IS NOT NULL;

DROP INDEX "events_org_id_idempotency_key_key";
CREATE UNIQUE INDEX "events_org_id_idempotency_key_key" ON "events"("org_id", "idempotency_key") WHERE "idempotency_key" IS NOT NULL;
