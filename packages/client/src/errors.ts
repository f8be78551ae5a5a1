/**
 * Every answer of Punctual's API that is not a 2xx, thrown by the client's methods. `message` is the
 * server's own sentence (every error body is `{"message": "..."}`), e.g. `Unable to find event`;
 * `status` is the HTTP status. A network failure (no answer at all) is not one of these: the
 * underlying `fetch` error is thrown as it is.
 */
export class PunctualError extends Error {
  override readonly name = "PunctualError";
  /** The HTTP status of the answer. */
  readonly status: number;
  /** The operation that was refused, by its OpenAPI `operationId` (e.g. `createEvent`). */
  readonly operation: string;
  /** The answer's body: the parsed JSON (`{ message }` for Punctual's own errors), or its text. */
  readonly body: unknown;
  /** The answer's headers (`Retry-After`, `RateLimit-*`, …). */
  readonly headers: Headers;
  /**
   * For a 429 (or 503) that said when to come back: that many seconds from the answer; otherwise
   * undefined. A 429 is thrown with it once the client's retries are used up or turned off.
   */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: { status: number; statusText?: string; operation: string; body: unknown; headers: Headers }) {
    super(serverMessage(init.body) ?? `${init.status} ${init.statusText ?? ""}`.trim());
    this.status = init.status;
    this.operation = init.operation;
    this.body = init.body;
    this.headers = init.headers;
    const delayMs = retryAfterMs(init.headers.get("retry-after"));
    this.retryAfterSeconds = delayMs === undefined ? undefined : Math.ceil(delayMs / 1000);
  }
}

/** The `message` of a Punctual error body; undefined for anything else (a proxy's HTML page, say). */
function serverMessage(body: unknown): string | undefined {
  if (typeof body !== "object" || body === null || !("message" in body)) return undefined;
  return typeof body.message === "string" && body.message !== "" ? body.message : undefined;
}

/**
 * A `Retry-After` value in milliseconds from now: delay-seconds (what Punctual sends) or an
 * HTTP-date (what a proxy in front of it may send). Undefined when absent or unreadable.
 */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}
