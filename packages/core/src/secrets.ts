import { createHash, randomBytes } from "node:crypto";

const API_KEY_PREFIX = "pk_";
/** How many characters of a key are kept in clear to tell keys apart in listings. */
const DISPLAY_PREFIX_LENGTH = API_KEY_PREFIX.length + 8;

/** A new API key: `pk_` + 32 random bytes in base64url (contract §2). Shown once, never stored. */
export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const key = API_KEY_PREFIX + randomBytes(32).toString("base64url");
  return { key, prefix: key.slice(0, DISPLAY_PREFIX_LENGTH), hash: hashApiKey(key) };
}

/** SHA-256 of a key, hex; the only form in which keys are stored. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** A new signing secret: `whsec_` + base64 of 32 random bytes (contract §2). */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString("base64")}`;
}
