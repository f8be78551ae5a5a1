import type { Db, DbOrTransaction } from "@punctual/db";
import type { DeliveryPolicy } from "../delivery-policy/policy.ts";

// Stored delivery policies (contract §10.1): the `delivery_policy` columns, an edit of a stored
// policy, and an organization's default, the fields events and cron runs created afterwards take
// when they leave them out. Stored as given (header values included); NULL when there is none.

/** A policy as it is written to a `delivery_policy` column: NULL when it has no field. */
export function policyColumn(policy: DeliveryPolicy | null | undefined): string | null {
  return policy === null || policy === undefined || Object.keys(policy).length === 0 ? null : JSON.stringify(policy);
}

/** A `delivery_policy` column as read: NULL (or `{}`) is no policy. */
export function policyFromColumn(value: unknown): DeliveryPolicy | null {
  if (value === null || value === undefined || typeof value !== "object") return null;
  return Object.keys(value).length === 0 ? null : (value as DeliveryPolicy);
}

/** The organization's default policy; `{}` when it has none (or no such organization). */
export async function readDefaultDeliveryPolicy(db: DbOrTransaction, orgId: string): Promise<DeliveryPolicy> {
  const [row] = await db.$queryRaw<{ delivery_policy: unknown }[]>`
    SELECT delivery_policy FROM organizations WHERE id = ${orgId}`;
  return policyFromColumn(row?.delivery_policy) ?? {};
}

/** Replaces the organization's default policy (`{}` clears it); returns what is stored. */
export async function storeDefaultDeliveryPolicy(
  db: Db,
  orgId: string,
  policy: DeliveryPolicy,
): Promise<DeliveryPolicy> {
  const [row] = await db.$queryRaw<{ delivery_policy: unknown }[]>`
    UPDATE organizations SET delivery_policy = ${policyColumn(policy)}::jsonb
    WHERE id = ${orgId}
    RETURNING delivery_policy`;
  return policyFromColumn(row?.delivery_policy) ?? {};
}

/**
 * An edit of delivery policy fields (contract §10.1): a field given replaces that field of the
 * stored policy, a field given as null removes it (the deployment's default applies again), a
 * field left out is kept.
 */
export type DeliveryPolicyEdit = { [F in keyof DeliveryPolicy]?: DeliveryPolicy[F] | null | undefined };

/** The stored policy with an edit applied; null when no field is left. */
export function applyPolicyEdit(
  stored: DeliveryPolicy | null | undefined,
  edit: DeliveryPolicyEdit | undefined,
): DeliveryPolicy | null {
  const policy: Record<string, unknown> = { ...(stored ?? {}) };
  for (const [field, value] of Object.entries(edit ?? {})) {
    if (value === null) delete policy[field];
    else if (value !== undefined) policy[field] = value;
  }
  return Object.keys(policy).length === 0 ? null : (policy as DeliveryPolicy);
}
