import { z } from "zod";

// Response shapes that have no zod schema of their own elsewhere: the error body, health, and the
// admin API's results (packages/core/src/organizations/operations.ts returns them as plain
// interfaces). Request bodies are never described here: the document takes those from the
// schemas the handlers validate with.

/** Every error body (contract §1): exactly one string field. */
export const ErrorSchema = z.strictObject({
  message: z.string().meta({ description: "One sentence saying what went wrong" }),
});

const timestamp = () => z.string().meta({ format: "date-time" });

export const HealthSchema = z.strictObject({ status: z.literal("ok") });

export const ReadySchema = z.strictObject({
  status: z.literal("ready"),
  postgres: z.literal("up"),
  redis: z.literal("up"),
});

export const AccountSchema = z.strictObject({ id: z.string(), email: z.string(), createdAt: timestamp() });

export const CreatedOrganizationSchema = z.strictObject({
  accountId: z.string(),
  orgId: z.string(),
  keyId: z.string().meta({ description: "The first API key's id (`key_…`), to revoke or rotate it" }),
  apiKey: z.string().meta({ description: "Shown once; only its SHA-256 hash is stored" }),
  signingSecret: z.string().meta({ description: "Signs every delivery of the organization" }),
});

export const OrganizationSchema = z.strictObject({
  id: z.string(),
  name: z.string(),
  ownerEmail: z.string(),
  members: z.number().int(),
  activeApiKeys: z.number().int(),
  createdAt: timestamp(),
  previousSecretValidUntil: timestamp().nullable().meta({
    description: "Until when the signing secret the last rotation replaced still signs deliveries; null: none does",
  }),
});

export const MemberSchema = z.strictObject({
  orgId: z.string(),
  accountId: z.string(),
  email: z.string(),
  role: z.literal("member"),
});

export const MembershipSchema = z.strictObject({
  accountId: z.string(),
  email: z.string(),
  role: z.enum(["owner", "member"]),
  since: z.string().meta({ format: "date-time", description: "When the account joined the organization" }),
});

export const CreatedApiKeySchema = z.strictObject({
  keyId: z.string(),
  orgId: z.string(),
  apiKey: z.string().meta({ description: "Shown once; only its SHA-256 hash is stored" }),
  prefix: z.string(),
});

export const RotatedApiKeySchema = CreatedApiKeySchema.extend({
  revokedKeyId: z.string().meta({ description: "The key this one replaces; it stopped working at once" }),
});

export const ApiKeySchema = z.strictObject({
  id: z.string(),
  orgId: z.string(),
  prefix: z.string(),
  createdAt: timestamp(),
  revokedAt: timestamp().nullable(),
  lastUsedAt: timestamp().nullable(),
});

export const RevokedApiKeySchema = z.strictObject({ keyId: z.string(), revokedAt: timestamp() });

export const RotatedSigningSecretSchema = z.strictObject({
  orgId: z.string(),
  signingSecret: z.string().meta({ description: "Signs every delivery from now on" }),
  previousSecretValidUntil: timestamp().nullable().meta({
    description:
      "Until when the replaced secret still signs deliveries beside the new one (`SIGNING_SECRET_OVERLAP_MS` after the rotation); null without an overlap",
  }),
});

export const EndedSigningSecretOverlapSchema = z.strictObject({
  orgId: z.string(),
  previousSecretValidUntil: z.null().meta({ description: "The replaced secret signs nothing any more" }),
});
