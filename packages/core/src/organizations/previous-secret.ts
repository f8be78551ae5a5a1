import { Prisma } from "@punctual/db";

/**
 * The select-list item `previous_signing_secret` of a claim that joins `organizations o`: the secret
 * the last rotation replaced while its overlap lasts, else NULL. Decided by the database's clock,
 * which also set the overlap's end at the rotation, so workers and admin hosts with skewed clocks
 * all agree on when it ends.
 */
export const PREVIOUS_SECRET_WHILE_VALID = Prisma.sql`CASE WHEN o.previous_secret_valid_until > now()
  THEN o.previous_signing_secret END AS previous_signing_secret`;
