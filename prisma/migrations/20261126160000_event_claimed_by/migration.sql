-- The worker that claimed an event's delivery (its heartbeat id), or took it over from a worker that
-- died. A job of a Queued event that another live worker still delivers steps aside instead of
-- sending it again: a worker that lost its job locks (a Redis failover, an event loop held up by a
-- burst) goes on delivering what it claimed. Null for events claimed before this column existed and
-- for events never claimed. Nullable without a default: adding it rewrites no row.
ALTER TABLE "events" ADD COLUMN "claimed_by" TEXT;
