import { createHmac } from "node:crypto";

/** Sent when the caller names no other agent; tracks the workspace version (contract §5). */
export const DEFAULT_USER_AGENT = "Punctual/0.1.0";

const STANDARD_WEBHOOKS_PREFIX = "whsec_";
/** Padded standard base64, as `standardwebhooks` decodes it (it rejects anything looser). */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

interface DeliveryRequestInput {
  /** Stable across the retries of one delivery: the event id or the cron run id. */
  webhookId: string;
  payload: string;
  /** A Date or an ISO 8601 string; either way it is sent as `toISOString()` (with milliseconds). */
  scheduledTime: Date | string;
  /** The organization's current secret. */
  signingSecret: string;
  /**
   * The secret a rotation replaced, while its overlap lasts (null or absent otherwise): the
   * delivery then carries a Standard Webhooks signature with each secret, and the Jiter signature,
   * which holds only one, with this one.
   */
  previousSigningSecret?: string | null | undefined;
  /** The moment of this attempt; both timestamps and signatures derive from it. */
  now: Date;
  userAgent?: string;
}

interface DeliveryRequest {
  body: string;
  headers: Record<string, string>;
}

/**
 * The one place that builds a delivery request (contract §5): the exact body, the Jiter-compatible
 * signature and the Standard Webhooks signature, all over the same body bytes.
 *
 * During a rotation's overlap `webhook-signature` holds `v1,<new> v1,<previous>` (Standard
 * Webhooks receivers accept any match, so either secret verifies), while `X-Jiter-Signature` stays
 * with the previous secret until the overlap ends: @jiter/node checks one secret against one
 * signature, so its receivers keep working until they switch, at the overlap's end at the latest.
 */
export function buildDeliveryRequest(input: DeliveryRequestInput): DeliveryRequest {
  const { webhookId, payload, scheduledTime, signingSecret, now } = input;
  const previous = input.previousSigningSecret ?? undefined;
  // Key order matters: @jiter/node re-serializes the parsed body before it checks the HMAC.
  const body = JSON.stringify({ payload, scheduledTime: new Date(scheduledTime).toISOString() });
  const jiterTimestamp = String(now.getTime());
  const standardTimestamp = String(Math.floor(now.getTime() / 1000));
  const standardSecrets =
    previous === undefined || previous === signingSecret ? [signingSecret] : [signingSecret, previous];
  return {
    body,
    headers: {
      "Content-Type": "application/json",
      "User-Agent": input.userAgent ?? DEFAULT_USER_AGENT,
      "X-Jiter-Request-Timestamp": jiterTimestamp,
      "X-Jiter-Signature": signJiter(previous ?? signingSecret, jiterTimestamp, body),
      "webhook-id": webhookId,
      "webhook-timestamp": standardTimestamp,
      "webhook-signature": standardSecrets
        .map((secret) => signStandardWebhooks(secret, webhookId, standardTimestamp, body))
        .join(" "),
    },
  };
}

/**
 * What @jiter/node 0.4.0's `Utils.signatureIsValid` recomputes: base64 HMAC-SHA256 of
 * `<timestamp>:<body>`, keyed with the secret string as given (Node hashes a string key as UTF-8).
 */
function signJiter(signingSecret: string, timestampMs: string, body: string): string {
  return createHmac("sha256", Buffer.from(signingSecret, "utf8"))
    .update(`${timestampMs}:${body}`, "utf8")
    .digest("base64");
}

/** Standard Webhooks `webhook-signature` value: `v1,<base64 HMAC-SHA256 of "<id>.<ts>.<body>">`. */
function signStandardWebhooks(
  signingSecret: string,
  webhookId: string,
  timestampSeconds: string,
  body: string,
): string {
  const mac = createHmac("sha256", standardWebhooksKey(signingSecret))
    .update(`${webhookId}.${timestampSeconds}.${body}`, "utf8")
    .digest("base64");
  return `v1,${mac}`;
}

/**
 * The HMAC key Standard Webhooks receivers use: the base64-decoded part after `whsec_`, or the
 * UTF-8 bytes of a custom secret. A `whsec_` secret whose rest is not strict base64 cannot be
 * loaded by `standardwebhooks` at all, so it is treated as a custom secret rather than decoded
 * leniently (Buffer's base64 decoder silently skips bad characters).
 */
export function standardWebhooksKey(signingSecret: string): Buffer {
  if (isStandardWebhooksSecret(signingSecret)) {
    return Buffer.from(signingSecret.slice(STANDARD_WEBHOOKS_PREFIX.length), "base64");
  }
  return Buffer.from(signingSecret, "utf8");
}

/** Whether a secret is in the Standard Webhooks form: `whsec_` and padded standard base64. */
export function isStandardWebhooksSecret(signingSecret: string): boolean {
  if (!signingSecret.startsWith(STANDARD_WEBHOOKS_PREFIX)) return false;
  const encoded = signingSecret.slice(STANDARD_WEBHOOKS_PREFIX.length);
  return encoded.length > 0 && STRICT_BASE64.test(encoded);
}
