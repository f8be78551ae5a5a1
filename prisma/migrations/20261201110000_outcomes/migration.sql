-- Outcomes (callbacks and operational webhooks). An event or a cron job may name a callback URL,
-- told of each final outcome of its deliveries. An organization keeps at most a few operational
-- webhooks, each for some types of notice. Every notice to send is a row of "notifications", written
-- in the statement (or transaction) that decides what it tells: an outbox that the workers deliver
-- through the same engine as events, so a crash between an outcome and its notice loses nothing.
--
-- Nullable without a default: adding them rewrites no row. (No semicolon may appear in these
-- comments: the migration runner splits a script at every semicolon.)
ALTER TABLE "events" ADD COLUMN IF NOT EXISTS "callback_url" TEXT;
ALTER TABLE "cron_jobs" ADD COLUMN IF NOT EXISTS "callback_url" TEXT;
CREATE TABLE IF NOT EXISTS "webhooks" (
  "id" TEXT NOT NULL,
  "org_id" TEXT NOT NULL,
  "url" TEXT NOT NULL,
  "types" TEXT[] NOT NULL,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "webhooks_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX IF NOT EXISTS "webhooks_org_id_idx" ON "webhooks"("org_id");
-- One notice to send. "dedupe_key" makes each notice single: a callback per delivery, a webhook's
-- quota notice per month. "subject_id" is what it tells of (an event, a cron run, an origin, a month).
CREATE TABLE IF NOT EXISTS "notifications" (
  "id" TEXT NOT NULL,
  "org_id" TEXT NOT NULL,
  "kind" TEXT NOT NULL,
  "type" TEXT NOT NULL,
  "subject_id" TEXT NOT NULL,
  "webhook_id" TEXT NOT NULL,
  "url" TEXT NOT NULL,
  "data" TEXT NOT NULL,
  "dedupe_key" TEXT NOT NULL,
  "status" TEXT NOT NULL DEFAULT 'Pending',
  "attempts" INTEGER NOT NULL DEFAULT 0,
  "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "lease_until" TIMESTAMPTZ(3),
  "last_attempt_at" TIMESTAMPTZ(3),
  "last_response_status" INTEGER,
  "last_response_body" TEXT,
  "last_error" TEXT,
  "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
  CONSTRAINT "notifications_pkey" PRIMARY KEY ("id"),
  CONSTRAINT "notifications_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "organizations"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE UNIQUE INDEX IF NOT EXISTS "notifications_dedupe_key_key" ON "notifications"("dedupe_key");
CREATE INDEX IF NOT EXISTS "notifications_subject_id_idx" ON "notifications"("subject_id");
CREATE INDEX IF NOT EXISTS "notifications_pending_idx" ON "notifications"("next_attempt_at") WHERE "status" = 'Pending';
CREATE INDEX IF NOT EXISTS "notifications_created_at_idx" ON "notifications"("created_at");
