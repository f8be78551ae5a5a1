import { createHmac, timingSafeEqual } from "node:crypto";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

// Verifies the deliveries Punctual POSTs to a destination. Each one carries two signatures over the
// same raw body, made with the organization's signing secret:
//
// - `webhook-signature` (Standard Webhooks): `v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">`,
//   checked by the `standardwebhooks` package. During a secret rotation's overlap it holds one entry
//   per secret, space-separated; one match is enough.
// - `X-Jiter-Signature`: base64 HMAC-SHA256 of `<X-Jiter-Request-Timestamp>:<body>` keyed with the
//   secret's UTF-8 bytes (what `@jiter/node` checks). During an overlap it is made with the
//   previous secret only.

export { WebhookVerificationError };

/** Which of a delivery's two signatures is checked. */
export type SignatureScheme = "standard-webhooks" | "jiter";

export interface WebhookVerifierOptions {
  /**
   * The organization's signing secret, whole (`whsec_…` or a custom one), or several: during a
   * rotation's overlap, the new one and the one it replaced. A delivery signed with any of them
   * verifies.
   */
  secret: string | readonly string[];
  /**
   * `standard-webhooks` (default): `webhook-signature`, which also signs `webhook-id`, so a
   * delivery's id can be trusted for spotting repeats. `jiter`: `X-Jiter-Signature`, for receivers
   * that moved from `@jiter/node` and keep its checks.
   */
  scheme?: SignatureScheme;
}

/** A delivery whose signature and timestamp were verified. */
export interface VerifiedDelivery {
  scheme: SignatureScheme;
  /**
   * `webhook-id`: the event's id (`evt_…`) or the cron run's (`run_…`), the same in every retry of
   * one delivery. Null under the `jiter` scheme, whose signature does not cover it.
   */
  id: string | null;
  /** When this attempt was signed. */
  timestamp: Date;
  /** The event's or cron job's payload, exactly as it was created (a string: parse it yourself). */
  payload: string;
  /** When the delivery was due (ISO 8601, UTC, milliseconds). */
  scheduledTime: string;
}

/** Request headers as Node's `req.headers`, a Fetch `Headers`, or a plain record. */
export type DeliveryHeaders = Headers | Record<string, string | readonly string[] | undefined>;

/** How far a signature's timestamp may be from this clock: the Standard Webhooks libraries' 5 minutes. */
export const TOLERANCE_SECONDS = 5 * 60;

const STANDARD_PREFIX = "whsec_";
/** Padded standard base64: a `whsec_` secret whose rest is not this is a custom secret to Punctual. */
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * A Standard Webhooks verifier keyed as Punctual signs: a `whsec_` secret by the bytes its base64
 * decodes to (the library decodes it), any other secret by its UTF-8 bytes (passed raw, since the
 * library would otherwise base64-decode the text into another key).
 */
function standardWebhook(secret: string): Webhook {
  const encoded = secret.slice(STANDARD_PREFIX.length);
  if (secret.startsWith(STANDARD_PREFIX) && encoded !== "" && STRICT_BASE64.test(encoded)) return new Webhook(secret);
  return new Webhook(new TextEncoder().encode(secret), { format: "raw" });
}

export class WebhookVerifier {
  readonly #scheme: SignatureScheme;
  readonly #secrets: readonly string[];
  readonly #webhooks: readonly Webhook[];

  constructor(options: WebhookVerifierOptions) {
    const secrets = typeof options.secret === "string" ? [options.secret] : [...options.secret];
    if (secrets.length === 0 || secrets.some((secret) => secret === "")) {
      throw new TypeError("WebhookVerifier needs at least one non-empty signing secret");
    }
    this.#scheme = options.scheme ?? "standard-webhooks";
    this.#secrets = secrets;
    this.#webhooks = secrets.map(standardWebhook);
  }

  /**
   * Checks a delivery's signature and timestamp over its raw body, exactly as it arrived (before any
   * JSON parser), and answers what it carries; throws WebhookVerificationError when it does not
   * verify. Answer 401 then: Punctual records the refusal and retries.
   */
  verify(rawBody: string | Uint8Array, headers: DeliveryHeaders): VerifiedDelivery {
    const body = typeof rawBody === "string" ? rawBody : utf8(rawBody);
    const read = headerReader(headers);
    const { id, timestamp } =
      this.#scheme === "jiter" ? this.#verifyJiter(body, read) : this.#verifyStandard(body, read);
    return { scheme: this.#scheme, id, timestamp, ...deliveryBody(body) };
  }

  #verifyStandard(body: string, read: HeaderReader): { id: string; timestamp: Date } {
    const headers = {
      "webhook-id": read("webhook-id") ?? "",
      "webhook-timestamp": read("webhook-timestamp") ?? "",
      "webhook-signature": read("webhook-signature") ?? "",
    };
    let failure: unknown;
    for (const webhook of this.#webhooks) {
      try {
        // Checks the timestamp, then each space-separated `v1,` entry in constant time.
        webhook.verify(body, headers, { jsonParse: false });
        // Read as the library read it when it checked the timestamp.
        const seconds = Number.parseInt(headers["webhook-timestamp"], 10);
        return { id: headers["webhook-id"], timestamp: new Date(seconds * 1000) };
      } catch (error) {
        failure = error;
      }
    }
    throw failure;
  }

  #verifyJiter(body: string, read: HeaderReader): { id: null; timestamp: Date } {
    const timestamp = read("x-jiter-request-timestamp");
    const signature = read("x-jiter-signature");
    if (!timestamp || !signature) throw new WebhookVerificationError("Missing required headers");
    if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError("Invalid Signature Headers");
    const age = Date.now() / 1000 - Number(timestamp) / 1000;
    if (age > TOLERANCE_SECONDS) throw new WebhookVerificationError("Message timestamp too old");
    if (-age > TOLERANCE_SECONDS) throw new WebhookVerificationError("Message timestamp too new");
    const given = Buffer.from(signature, "utf8");
    for (const secret of this.#secrets) {
      const expected = Buffer.from(
        createHmac("sha256", Buffer.from(secret, "utf8")).update(`${timestamp}:${body}`, "utf8").digest("base64"),
        "utf8",
      );
      if (given.length === expected.length && timingSafeEqual(given, expected)) {
        return { id: null, timestamp: new Date(Number(timestamp)) };
      }
    }
    throw new WebhookVerificationError("No matching signature found");
  }
}

/** One call: `new WebhookVerifier(options).verify(rawBody, headers)`. */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: DeliveryHeaders,
  options: WebhookVerifierOptions,
): VerifiedDelivery {
  return new WebhookVerifier(options).verify(rawBody, headers);
}

type HeaderReader = (name: string) => string | undefined;

/** Reads a header by its lower-case name from any of the DeliveryHeaders forms; a repeated one by its first value. */
function headerReader(headers: DeliveryHeaders): HeaderReader {
  // By shape rather than instanceof: a Headers of another fetch implementation than the global one.
  if (isFetchHeaders(headers)) return (name) => headers.get(name) ?? undefined;
  const lower = new Map(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), value]));
  return (name) => {
    const value = lower.get(name);
    return typeof value === "string" ? value : value?.[0];
  };
}

function isFetchHeaders(headers: DeliveryHeaders): headers is Headers {
  return typeof (headers as Partial<Headers>).get === "function";
}

/** Every delivery's body is UTF-8 JSON: other bytes cannot be one. */
function utf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new WebhookVerificationError("The body is not UTF-8");
  }
}

/** The body every delivery has: `{"payload": "...", "scheduledTime": "..."}`. */
function deliveryBody(body: string): { payload: string; scheduledTime: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw new WebhookVerificationError("The body is not a Punctual delivery");
  }
  if (
    typeof parsed === "object" &&
    parsed !== null &&
    "payload" in parsed &&
    typeof parsed.payload === "string" &&
    "scheduledTime" in parsed &&
    typeof parsed.scheduledTime === "string"
  ) {
    return { payload: parsed.payload, scheduledTime: parsed.scheduledTime };
  }
  throw new WebhookVerificationError("The body is not a Punctual delivery");
}
