// Header values that are secrets are sent as given but never shown (contract §10.1): every
// record, list, log line, console page and failure e-mail answers them as "[redacted]".

export const REDACTED = "[redacted]";

const SENSITIVE_NAMES = new Set(["authorization", "proxy-authorization", "cookie"]);
const SENSITIVE_PARTS = ["token", "secret", "key", "password"];

/**
 * Whether a header's value is a secret: Authorization, Proxy-Authorization, Cookie, and any name
 * containing token, secret, key or password, in any case (`X-Api-Key`, `X-Auth-Token`).
 */
export function isSensitiveHeaderName(name: string): boolean {
  const lower = name.toLowerCase();
  return SENSITIVE_NAMES.has(lower) || SENSITIVE_PARTS.some((part) => lower.includes(part));
}

/** A copy of `headers` with each sensitive value replaced by "[redacted]"; names kept as written. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, isSensitiveHeaderName(name) ? REDACTED : value]),
  );
}

/**
 * A policy (stored or resolved) as it may be shown: a copy with its headers redacted. Null stays
 * null and a policy without headers is returned as it is.
 */
export function redactPolicy<P extends { headers?: Record<string, string> | undefined }>(policy: P): P;
export function redactPolicy<P extends { headers?: Record<string, string> | undefined }>(policy: P | null): P | null;
export function redactPolicy<P extends { headers?: Record<string, string> | undefined }>(policy: P | null): P | null {
  if (policy === null || policy.headers === undefined) return policy;
  return { ...policy, headers: redactHeaders(policy.headers) };
}
