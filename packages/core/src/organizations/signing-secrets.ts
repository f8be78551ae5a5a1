import { type Db, Prisma, queryRows } from "@punctual/db";
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
  return (await readSigningSecretsOf(db, [orgId])).get(orgId);
}

/**
 * The secrets of several organizations at once, by id (those gone are missing): a worker's retries
 * due together read them in one statement, straight on the pool.
 */
export async function readSigningSecretsOf(db: Db, orgIds: string[]): Promise<Map<string, SigningSecrets>> {
  const rows = await queryRows<{ id: string; signing_secret: string; previous_signing_secret: string | null }>(
    db,
    Prisma.sql`SELECT o.id, o.signing_secret, ${PREVIOUS_SECRET_WHILE_VALID}
      FROM organizations o WHERE o.id = ANY(${orgIds}::text[])`,
  );
  return new Map(
    rows.map((row) => [
      row.id,
      { signingSecret: row.signing_secret, previousSigningSecret: row.previous_signing_secret },
    ]),
  );
}
