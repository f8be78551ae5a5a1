import { z } from "zod";
import { isStandardWebhooksSecret } from "../signing.ts";
import { INVISIBLE_TEXT_CHARACTERS, UNSAFE_TEXT_CHARACTERS } from "./display.ts";

/**
 * Refuses control characters, line separators and bidi overrides (see display.ts) before anything
 * else, trimming included: such a character is refused wherever it is, not silently cut off the ends.
 */
const withoutUnsafeCharacters = (field: string) =>
  [
    (text: string) => !UNSAFE_TEXT_CHARACTERS.test(text),
    {
      message: `'${field}' must not contain control characters, line breaks or bidirectional overrides`,
      abort: true,
    },
  ] as const;

/**
 * Refuses characters that show nothing (see INVISIBLE_TEXT_CHARACTERS in display.ts): with one, two
 * names that look the same are different text, in the operator's list and anywhere else shown.
 */
const withoutInvisibleCharacters = (field: string) =>
  [
    (text: string) => !INVISIBLE_TEXT_CHARACTERS.test(text),
    {
      message: `'${field}' must not contain invisible characters such as zero-width spaces, joiners or byte order marks`,
      abort: true,
    },
  ] as const;

/**
 * At most this many nonspacing or enclosing marks on one character. Written languages need no more
 * (Vietnamese two, Hebrew points or Tibetan stacks three or four); a flood of them draws over the
 * lines around the name, or hides what the name says, and a 200-character name could carry 199.
 */
export const MAX_MARKS_PER_CHARACTER = 4;

/** Each run of nonspacing and enclosing marks, with the marks of precomposed letters taken apart. */
const markRuns = (text: string) => text.normalize("NFD").match(/[\p{Mn}\p{Me}]+/gu) ?? [];

const withoutMarkFloods = [
  (text: string) => markRuns(text).every((run) => [...run].length <= MAX_MARKS_PER_CHARACTER),
  {
    message: `'name' must not stack more than ${MAX_MARKS_PER_CHARACTER} combining marks on one character`,
    abort: true,
  },
] as const;

/** The same mark twice on one character draws over itself: "e" with one acute or two looks alike. */
const withoutRepeatedMarks = [
  (text: string) => markRuns(text).every((run) => new Set(run).size === [...run].length),
  { message: "'name' must not repeat a combining mark on one character", abort: true },
] as const;

const email = z
  .string({ error: (issue) => (issue.input === undefined ? "'email' is required" : "'email' must be a string") })
  .refine(...withoutUnsafeCharacters("email"))
  .refine(...withoutInvisibleCharacters("email"))
  .trim()
  .toLowerCase()
  .pipe(z.email({ error: "'email' must be a valid email address" }));

const organizationName = z
  .string()
  // NUL among them: Postgres text cannot hold it either.
  .refine(...withoutUnsafeCharacters("name"))
  .refine(...withoutInvisibleCharacters("name"))
  .refine(...withoutMarkFloods)
  .refine(...withoutRepeatedMarks)
  // One spelling per name: "é" typed as one character or as "e" and a combining acute is stored
  // as the same text (NFC, the composed form), so names that look alike also compare equal.
  .normalize("NFC")
  .trim()
  .min(1, "'name' must not be empty")
  .max(200, "'name' must be at most 200 characters");

/**
 * A custom signing secret: `whsec_` + base64 of at least 24 bytes (the Standard Webhooks form), or
 * any other string of 24 to 256 characters, whose UTF-8 bytes are then the key.
 */
export const SigningSecretSchema = z
  .string()
  .max(256, "'signingSecret' must be at most 256 characters")
  .refine((secret) => !secret.includes("\u0000"), {
    message: "'signingSecret' must not contain NUL characters",
    abort: true,
  })
  .refine(
    (secret) => {
      if (!secret.startsWith("whsec_")) return secret.length >= 24;
      // The rest must be what Standard Webhooks libraries decode (padded base64): a looser form
      // would be signed as a custom secret, and those libraries would refuse every delivery.
      return isStandardWebhooksSecret(secret) && Buffer.from(secret.slice("whsec_".length), "base64").length >= 24;
    },
    {
      message:
        "'signingSecret' must be 'whsec_' followed by padded base64 of at least 24 bytes, or any text of at least 24 characters",
    },
  );

/**
 * Record ids as far as their form goes: the type prefix, then lower-case letters and digits. Ids
 * made here are 26 characters after the prefix (ids.ts), but the length is not checked: an id of
 * the right kind that names nothing (a truncated paste, `key_doesnotexist`) is looked up and
 * reported as not found, which tells its reader more than "wrong format" for something that starts
 * with the right prefix. The bound keeps an echoed id short.
 */
export const orgId = z.string().regex(/^org_[0-9a-z]{1,64}$/, "'orgId' must be an organization id (org_…)");
export const keyId = z.string().regex(/^key_[0-9a-z]{1,64}$/, "'keyId' must be an API key id (key_…)");

export const CreateAccountInputSchema = z.strictObject({ email });
export type CreateAccountInput = z.input<typeof CreateAccountInputSchema>;

export const CreateOrganizationInputSchema = z.strictObject({
  email,
  name: organizationName,
  signingSecret: SigningSecretSchema.optional(),
});
export type CreateOrganizationInput = z.input<typeof CreateOrganizationInputSchema>;

export const ListOrganizationsInputSchema = z.strictObject({ email: email.optional() });
export type ListOrganizationsInput = z.input<typeof ListOrganizationsInputSchema>;

export const AddMemberInputSchema = z.strictObject({ orgId, email });
export type AddMemberInput = z.input<typeof AddMemberInputSchema>;

export const OrgRefInputSchema = z.strictObject({ orgId });
export type OrgRefInput = z.input<typeof OrgRefInputSchema>;

export const KeyRefInputSchema = z.strictObject({ keyId });
export type KeyRefInput = z.input<typeof KeyRefInputSchema>;

export const RotateSecretInputSchema = z.strictObject({ orgId, signingSecret: SigningSecretSchema.optional() });
export type RotateSecretInput = z.input<typeof RotateSecretInputSchema>;
