import type { Db } from "@punctual/db";
import { PREVIOUS_SECRET_WHILE_VALID } from "./previous-secret.ts";

/** What signs an organization's deliveries now: its secret, and the replaced one while its overlap lasts. */
export interface SigningSecrets {
  signingSecret: string;
  previousSigningSecret: string | null;
}

/**
 * The secrets of an organization as a claim would read them now; undefined when it is gone. A retry
 * reads them again, so a rotation or an ended overlap since the claim applies to it.
 */
export async function readSigningSecrets(db: Db, orgId: string): Promise<SigningSecrets | undefined> {
  const [row] = await db.$queryRaw<{ signing_secret: string; previous_signing_secret: string | null }[]>`
    SELECT o.signing_secret, ${PREVIOUS_SECRET_WHILE_VALID} FROM organizations o WHERE o.id = ${orgId}`;
  return row && { signingSecret: row.signing_secret, previousSigningSecret: row.previous_signing_secret };
}
