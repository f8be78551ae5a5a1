-- Replay (console and API): an event created to send an earlier one's payload to its destination
-- again names that event. No foreign key: retention may delete the original before its replay.
-- AlterTable
ALTER TABLE "events" ADD COLUMN "replay_of" TEXT;

-- Bulk replay skips failed events that were replayed already.
-- CreateIndex
CREATE INDEX "events_replay_of_idx" ON "events"("replay_of");
