import { createHmac } from "node:crypto";
import { headerValue, type ResolvedDeliveryPolicy } from "./delivery-policy/policy.ts";
import { buildRequestBody } from "./delivery-policy/request-body.ts";

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
  /**
   * The delivery's method, headers and body mode (contract §10.1); absent: `POST` of the envelope
   * with no headers of the client's, byte for byte what a delivery without a policy sends.
   */
  policy?: Pick<ResolvedDeliveryPolicy, "method" | "headers" | "body"> | undefined;
}

export interface DeliveryRequest {
  method: ResolvedDeliveryPolicy["method"];
  /** The exact bytes sent and signed: the empty string for GET and DELETE, which send no body. */
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
  const { webhookId, payload, scheduledTime, signingSecret, now, policy } = input;
  const previous = input.previousSigningSecret ?? undefined;
  let body: string | undefined;
  let contentType: string | undefined;
  if (policy === undefined || (policy.method === "POST" && policy.body === "envelope" && isEmpty(policy.headers))) {
    // Key order matters: @jiter/node re-serializes the parsed body before it checks the HMAC.
    body = JSON.stringify({ payload, scheduledTime: new Date(scheduledTime).toISOString() });
    contentType = "application/json";
  } else {
    ({ body, contentType } = buildRequestBody({
      method: policy.method,
      body: policy.body,
      payload,
      scheduledTime,
      headers: policy.headers,
    }));
  }
  const signed = body ?? "";
  const jiterTimestamp = String(now.getTime());
  const standardTimestamp = String(Math.floor(now.getTime() / 1000));
  const standardSecrets =
    previous === undefined || previous === signingSecret ? [signingSecret] : [signingSecret, previous];
  const ours: Record<string, string> = {
    "User-Agent": input.userAgent ?? DEFAULT_USER_AGENT,
    "X-Jiter-Request-Timestamp": jiterTimestamp,
    "X-Jiter-Signature": signJiter(previous ?? signingSecret, jiterTimestamp, signed),
    "webhook-id": webhookId,
    "webhook-timestamp": standardTimestamp,
    "webhook-signature": standardSecrets
      .map((secret) => signStandardWebhooks(secret, webhookId, standardTimestamp, signed))
      .join(" "),
  };
  // The client's headers first, as given (a Content-Type of theirs is theirs); the names they may
  // not set (the signatures', User-Agent's) are refused when the policy is written.
  const headers: Record<string, string> =
    policy === undefined || isEmpty(policy.headers)
      ? contentType === undefined
        ? ours
        : { "Content-Type": contentType, ...ours }
      : withClientHeaders(policy.headers, contentType, ours);
  return { method: policy?.method ?? "POST", body: signed, headers };
}

function isEmpty(headers: Record<string, string>): boolean {
  for (const _ in headers) return false;
  return true;
}

/** The client's headers, our Content-Type unless they set one (any case), then ours. */
function withClientHeaders(
  client: Record<string, string>,
  contentType: string | undefined,
  ours: Record<string, string>,
): Record<string, string> {
  const headers: Record<string, string> = { ...client };
  if (contentType !== undefined && headerValue(client, "content-type") === undefined) {
    headers["Content-Type"] = contentType;
  }
  return Object.assign(headers, ours);
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
