-- A repeat of an Idempotency-Key must be the same request (contract, section 3): the digest of the
-- request that first used the key is kept beside it. Events stored before have none, and any
-- repeat of their key is taken as the same request.
-- AlterTable
ALTER TABLE "events" ADD COLUMN "request_digest" TEXT;
