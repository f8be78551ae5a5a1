import { BODYLESS_METHODS, type BodyMode, type DeliveryMethod, headerValue } from "./policy.ts";

/** The Content-Type of the envelope, and of a raw payload that parses as JSON. */
export const JSON_CONTENT_TYPE = "application/json";
/** The Content-Type of a raw payload that is not JSON, when the client named none. */
export const TEXT_CONTENT_TYPE = "text/plain; charset=utf-8";

export interface RequestBodyInput {
  method: DeliveryMethod;
  body: BodyMode;
  payload: string;
  /** A Date or an ISO 8601 string; either way the envelope holds its `toISOString()`. */
  scheduledTime: Date | string;
  /** The policy's extra headers; a Content-Type among them (any case) is the one sent. */
  headers?: Record<string, string> | undefined;
}

export interface RequestBody {
  /** The exact body; undefined for GET and DELETE, which send none (signatures cover ""). */
  body: string | undefined;
  /**
   * The Content-Type to send: the client's own Content-Type header when it set one, else the
   * body's (application/json for the envelope); undefined when no body is sent.
   */
  contentType: string | undefined;
}

/** The envelope of contract §5, byte for byte what deliveries without a policy send. */
export function envelopeBody(payload: string, scheduledTime: Date | string): string {
  // Key order matters: @jiter/node re-serializes the parsed body before it checks the HMAC.
  return JSON.stringify({ payload, scheduledTime: new Date(scheduledTime).toISOString() });
}

/** Whether a text is JSON (what JSON.parse accepts). */
export function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The media type of a Content-Type value, lowercased, without its parameters. */
export function mediaTypeOf(contentType: string): string {
  return (contentType.split(";")[0] ?? "").trim().toLowerCase();
}

/** Whether a Content-Type names JSON: `application/json` or a structured `…/…+json` type. */
export function isJsonContentType(contentType: string): boolean {
  const mediaType = mediaTypeOf(contentType);
  return mediaType === JSON_CONTENT_TYPE || /^[^/\s]+\/[^/\s]+\+json$/.test(mediaType);
}

/**
 * The body and Content-Type of a delivery (contract §10.1). `envelope`: §5's JSON envelope.
 * `raw`: the payload string itself, typed by the client's Content-Type header, else
 * application/json when it parses as JSON, else text/plain. GET and DELETE send no body and so
 * no Content-Type of ours.
 */
export function buildRequestBody(input: RequestBodyInput): RequestBody {
  if (BODYLESS_METHODS.includes(input.method)) return { body: undefined, contentType: undefined };
  const own = headerValue(input.headers, "content-type");
  if (input.body === "envelope") {
    return { body: envelopeBody(input.payload, input.scheduledTime), contentType: own ?? JSON_CONTENT_TYPE };
  }
  const contentType = own ?? (parsesAsJson(input.payload) ? JSON_CONTENT_TYPE : TEXT_CONTENT_TYPE);
  return { body: input.payload, contentType };
}
