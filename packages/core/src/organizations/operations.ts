import type { Db, DbOrTransaction, DbTransaction } from "@punctual/db";
import { isUniqueViolation } from "@punctual/db";
import type { Clock } from "../clock.ts";
import { systemClock } from "../clock.ts";
import type { Config } from "../config.ts";
import type { ApiKeyConsoleSessions } from "../console-sessions.ts";
import { AppError, badRequest, forbidden, notFound } from "../errors.ts";
import { newId } from "../ids.ts";
import { generateApiKey, generateSigningSecret } from "../secrets.ts";
import { parseInput } from "../validation.ts";
import {
  type AddMemberInput,
  AddMemberInputSchema,
  type CreateAccountInput,
  CreateAccountInputSchema,
  type CreateOrganizationInput,
  CreateOrganizationInputSchema,
  type KeyRefInput,
  KeyRefInputSchema,
  type ListOrganizationsInput,
  ListOrganizationsInputSchema,
  type OrgRefInput,
  OrgRefInputSchema,
  type RotateSecretInput,
  RotateSecretInputSchema,
} from "./schemas.ts";

// Accounts, organizations, members, API keys and signing secrets (contract §2). The admin CLI and
// the admin HTTP API both call these, so the two surfaces cannot drift apart. Inputs are validated
// here, with the same messages on both surfaces.

export interface AdminDeps {
  db: Db;
  config: Pick<Config, "MAX_ORGS_PER_ACCOUNT" | "SIGNING_SECRET_OVERLAP_MS">;
  clock?: Clock;
  /**
   * The console sessions of API keys, deleted when a key is revoked or rotated. Absent where no
   * console runs against this database (tests of other parts); a session of a revoked key is
   * refused at its next use anyway, the deletion frees its memory and ends it before.
   */
  consoleSessions?: ApiKeyConsoleSessions;
}

interface AccountView {
  id: string;
  email: string;
  createdAt: string;
}

interface CreatedOrganization {
  accountId: string;
  orgId: string;
  /** The first key's id, for key:rotate / key:revoke without listing the keys first. */
  keyId: string;
  apiKey: string;
  signingSecret: string;
}

interface OrganizationView {
  id: string;
  name: string;
  ownerEmail: string;
  members: number;
  activeApiKeys: number;
  createdAt: string;
  /** When the secret the last rotation replaced stops signing deliveries; null when none does. */
  previousSecretValidUntil: string | null;
}

interface MemberView {
  orgId: string;
  accountId: string;
  email: string;
  role: "member";
}

/** One account of an organization, as the operator's list of members shows it. */
interface MembershipView {
  accountId: string;
  email: string;
  role: "owner" | "member";
  since: string;
}

interface CreatedApiKey {
  keyId: string;
  orgId: string;
  apiKey: string;
  prefix: string;
}

interface RotatedSigningSecret {
  orgId: string;
  signingSecret: string;
  /** Until when the replaced secret still signs deliveries beside the new one; null: it no longer does. */
  previousSecretValidUntil: string | null;
}

interface ApiKeyView {
  id: string;
  orgId: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export const ORGANIZATION_NOT_FOUND = "Unable to find organization";
export const API_KEY_NOT_FOUND = "Unable to find API key";

export async function createAccount(deps: AdminDeps, input: CreateAccountInput): Promise<AccountView> {
  const { email } = parseInput(CreateAccountInputSchema, input);
  try {
    const account = await deps.db.account.create({ data: { id: newId("acc"), email } });
    return { id: account.id, email: account.email, createdAt: account.createdAt.toISOString() };
  } catch (error) {
    if (isUniqueViolation(error)) throw new AppError("CONFLICT", `An account with email ${email} already exists`);
    throw error;
  }
}

/** Finds or creates the account of an email inside a transaction and locks its row. */
async function lockAccount(tx: DbTransaction, email: string): Promise<string> {
  await tx.$executeRaw`INSERT INTO accounts (id, email) VALUES (${newId("acc")}, ${email}) ON CONFLICT (email) DO NOTHING`;
  const [row] = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM accounts WHERE email = ${email} FOR UPDATE`;
  if (!row) throw new Error(`account row for ${email} vanished inside its transaction`);
  return row.id;
}

/**
 * Creates an organization owned by the account of `email` (created when missing), with its first
 * API key and a signing secret. The per-account limit is checked under a lock on the account row,
 * so concurrent creates cannot pass it. Nothing is left behind when any step fails.
 */
export async function createOrganization(
  deps: AdminDeps,
  input: CreateOrganizationInput,
): Promise<CreatedOrganization> {
  const { email, name, signingSecret } = parseInput(CreateOrganizationInputSchema, input);
  const limit = deps.config.MAX_ORGS_PER_ACCOUNT;
  const secret = signingSecret ?? generateSigningSecret();
  const key = generateApiKey();
  return deps.db.$transaction(async (tx) => {
    const accountId = await lockAccount(tx, email);
    const owned = await tx.organization.count({ where: { ownerId: accountId } });
    if (owned >= limit) throw forbidden(`Organization limit of ${limit} reached for this account`);
    const orgId = newId("org");
    await tx.organization.create({ data: { id: orgId, name, ownerId: accountId, signingSecret: secret } });
    await tx.membership.create({ data: { orgId, accountId, role: "owner" } });
    const keyId = newId("key");
    await tx.apiKey.create({ data: { id: keyId, orgId, prefix: key.prefix, hash: key.hash } });
    return { accountId, orgId, keyId, apiKey: key.key, signingSecret: secret };
  });
}

export async function listOrganizations(
  deps: AdminDeps,
  input: ListOrganizationsInput = {},
): Promise<OrganizationView[]> {
  const { email } = parseInput(ListOrganizationsInputSchema, input);
  const now = (deps.clock ?? systemClock).now();
  const orgs = await deps.db.organization.findMany({
    where: email ? { memberships: { some: { account: { email } } } } : {},
    orderBy: { createdAt: "asc" },
    include: {
      owner: { select: { email: true } },
      _count: { select: { memberships: true, apiKeys: { where: { revokedAt: null } } } },
    },
  });
  return orgs.map((org) => ({
    id: org.id,
    name: org.name,
    ownerEmail: org.owner.email,
    members: org._count.memberships,
    activeApiKeys: org._count.apiKeys,
    createdAt: org.createdAt.toISOString(),
    previousSecretValidUntil:
      org.previousSecretValidUntil && org.previousSecretValidUntil > now
        ? org.previousSecretValidUntil.toISOString()
        : null,
  }));
}

async function requireOrganization(db: DbOrTransaction, orgId: string): Promise<void> {
  const org = await db.organization.findUnique({ where: { id: orgId }, select: { id: true } });
  if (!org) throw notFound(ORGANIZATION_NOT_FOUND);
}

/** Adds the account of `email` (created when missing) to an organization as a member. */
export async function addMember(deps: AdminDeps, input: AddMemberInput): Promise<MemberView> {
  const { orgId, email } = parseInput(AddMemberInputSchema, input);
  return deps.db.$transaction(async (tx) => {
    await requireOrganization(tx, orgId);
    const accountId = await lockAccount(tx, email);
    try {
      await tx.membership.create({ data: { orgId, accountId, role: "member" } });
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError("CONFLICT", `${email} is already a member of ${orgId}`);
      throw error;
    }
    return { orgId, accountId, email, role: "member" as const };
  });
}

/** Every account of an organization, the owner first, then by when each joined. */
export async function listMembers(deps: AdminDeps, input: OrgRefInput): Promise<MembershipView[]> {
  const { orgId } = parseInput(OrgRefInputSchema, input);
  await requireOrganization(deps.db, orgId);
  const rows = await deps.db.membership.findMany({
    where: { orgId },
    orderBy: [{ createdAt: "asc" }, { accountId: "asc" }],
    include: { account: { select: { email: true } } },
  });
  const members = rows.map((row) => ({
    accountId: row.accountId,
    email: row.account.email,
    role: row.role === "owner" ? ("owner" as const) : ("member" as const),
    since: row.createdAt.toISOString(),
  }));
  return [...members.filter((m) => m.role === "owner"), ...members.filter((m) => m.role !== "owner")];
}

export async function createApiKey(deps: AdminDeps, input: OrgRefInput): Promise<CreatedApiKey> {
  const { orgId } = parseInput(OrgRefInputSchema, input);
  await requireOrganization(deps.db, orgId);
  const key = generateApiKey();
  const row = await deps.db.apiKey.create({ data: { id: newId("key"), orgId, prefix: key.prefix, hash: key.hash } });
  return { keyId: row.id, orgId, apiKey: key.key, prefix: key.prefix };
}

export async function listApiKeys(deps: AdminDeps, input: OrgRefInput): Promise<ApiKeyView[]> {
  const { orgId } = parseInput(OrgRefInputSchema, input);
  await requireOrganization(deps.db, orgId);
  const keys = await deps.db.apiKey.findMany({ where: { orgId }, orderBy: { createdAt: "asc" } });
  return keys.map((key) => ({
    id: key.id,
    orgId: key.orgId,
    prefix: key.prefix,
    createdAt: key.createdAt.toISOString(),
    revokedAt: key.revokedAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
  }));
}

/**
 * Deletes the console sessions of a key that no longer works. A failure is reported, not thrown:
 * the key is revoked in Postgres already, which is what refuses its sessions.
 */
async function endConsoleSessions(deps: AdminDeps, keyId: string): Promise<void> {
  const sessions = deps.consoleSessions;
  if (!sessions) return;
  try {
    await sessions.endAll(keyId);
  } catch (error) {
    sessions.failed(keyId, error);
  }
}

/**
 * Revokes a key; it stops working at once, and its console sessions are deleted. Revoking a revoked
 * key changes nothing but deleting sessions again (a previous attempt may have failed).
 */
export async function revokeApiKey(deps: AdminDeps, input: KeyRefInput): Promise<{ keyId: string; revokedAt: string }> {
  const { keyId } = parseInput(KeyRefInputSchema, input);
  const now = (deps.clock ?? systemClock).now();
  await deps.db.apiKey.updateMany({ where: { id: keyId, revokedAt: null }, data: { revokedAt: now } });
  const key = await deps.db.apiKey.findUnique({ where: { id: keyId } });
  if (!key?.revokedAt) throw notFound(API_KEY_NOT_FOUND);
  await endConsoleSessions(deps, keyId);
  return { keyId, revokedAt: key.revokedAt.toISOString() };
}

/**
 * Replaces a key by a new one of the same organization; the old key stops working at once, and its
 * console sessions are deleted (once the replacement is committed).
 */
export async function rotateApiKey(
  deps: AdminDeps,
  input: KeyRefInput,
): Promise<CreatedApiKey & { revokedKeyId: string }> {
  const { keyId } = parseInput(KeyRefInputSchema, input);
  const now = (deps.clock ?? systemClock).now();
  const key = generateApiKey();
  const rotated = await deps.db.$transaction(async (tx) => {
    const [old] = await tx.$queryRaw<{ org_id: string; revoked_at: Date | null }[]>`
      SELECT org_id, revoked_at FROM api_keys WHERE id = ${keyId} FOR UPDATE`;
    if (!old) throw notFound(API_KEY_NOT_FOUND);
    if (old.revoked_at) throw badRequest("A revoked API key cannot be rotated; create a new key instead");
    await tx.apiKey.update({ where: { id: keyId }, data: { revokedAt: now } });
    const row = await tx.apiKey.create({
      data: { id: newId("key"), orgId: old.org_id, prefix: key.prefix, hash: key.hash },
    });
    return { keyId: row.id, orgId: old.org_id, apiKey: key.key, prefix: key.prefix, revokedKeyId: keyId };
  });
  await endConsoleSessions(deps, keyId);
  return rotated;
}

/**
 * Sets a new signing secret (generated unless supplied). The secret it replaces keeps signing
 * deliveries beside it for SIGNING_SECRET_OVERLAP_MS (see buildDeliveryRequest); one rotated out
 * earlier is dropped, so at most two secrets sign at once. Rotating to the secret already current
 * changes nothing (a repeated command must not cut an overlap short). One statement, timed by the
 * database's clock, which is the one the claims read the overlap with.
 */
export async function rotateSigningSecret(deps: AdminDeps, input: RotateSecretInput): Promise<RotatedSigningSecret> {
  const { orgId, signingSecret } = parseInput(RotateSecretInputSchema, input);
  const secret = signingSecret ?? generateSigningSecret();
  const overlapMs = deps.config.SIGNING_SECRET_OVERLAP_MS;
  const [row] = await deps.db.$queryRaw<{ previous_secret_valid_until: Date | null }[]>`
    UPDATE organizations SET
      previous_signing_secret = CASE
        WHEN signing_secret = ${secret} THEN previous_signing_secret
        WHEN ${overlapMs}::bigint > 0 THEN signing_secret
      END,
      previous_secret_valid_until = CASE
        WHEN signing_secret = ${secret} THEN previous_secret_valid_until
        WHEN ${overlapMs}::bigint > 0 THEN now() + ${overlapMs}::double precision * interval '1 millisecond'
      END,
      signing_secret = ${secret},
      updated_at = now()
    WHERE id = ${orgId}
    RETURNING CASE WHEN previous_secret_valid_until > now() THEN previous_secret_valid_until END
      AS previous_secret_valid_until`;
  if (!row) throw notFound(ORGANIZATION_NOT_FOUND);
  return {
    orgId,
    signingSecret: secret,
    previousSecretValidUntil: row.previous_secret_valid_until?.toISOString() ?? null,
  };
}

/**
 * Ends a rotation's overlap now: the replaced secret is forgotten and deliveries claimed from now
 * on are signed with the current secret only. Ending when no overlap is under way changes nothing.
 */
export async function endSigningSecretOverlap(
  deps: AdminDeps,
  input: OrgRefInput,
): Promise<{ orgId: string; previousSecretValidUntil: null }> {
  const { orgId } = parseInput(OrgRefInputSchema, input);
  const updated = await deps.db.organization.updateMany({
    where: { id: orgId },
    data: { previousSigningSecret: null, previousSecretValidUntil: null },
  });
  if (updated.count === 0) throw notFound(ORGANIZATION_NOT_FOUND);
  return { orgId, previousSecretValidUntil: null };
}
