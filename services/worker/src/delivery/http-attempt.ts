import { performance } from "node:perf_hooks";
import { deliveryErrorText } from "@punctual/core";
import type { Dispatcher } from "undici";
import { type AttemptOutcome, RESPONSE_BODY_LIMIT, RESPONSE_READ_LIMIT } from "./transport.ts";

// One attempt's HTTP exchange on undici: the outcome of a request (its status, the first bytes of
// its answer, or why there was none) and the words an outcome is recorded with.

/** One byte past the limit shows whether the cut at the limit splits a character. */
const BODY_BYTES_KEPT = RESPONSE_BODY_LIMIT + 1;

export function refusedOutcome(error: string): AttemptOutcome {
  return {
    ok: false,
    startedAt: new Date(),
    responseStatus: null,
    responseBody: null,
    durationMs: 0,
    error,
    retryAfter: null,
    kind: "refused",
  };
}

/** The attempt's timer callback: a plain function with the attempt as argument, no closure. */
function onAttemptTimeout(attempt: HttpAttempt): void {
  attempt.timeUp();
}

/** Raised into undici to abort a request we no longer wait for. */
const RESPONSE_CUT = new Error("Response no longer read");

/**
 * One request in flight, as undici's dispatch handler: it collects the status and the first bytes
 * of the body and settles the outcome exactly once. All state lives in fields so one object (plus
 * its timer and promise) is the whole per-request cost.
 */
export class HttpAttempt implements Dispatcher.DispatchHandler {
  private readonly startedAt = Date.now();
  private readonly started = performance.now();
  private timer: NodeJS.Timeout;
  private status: number | null = null;
  /** The kept bytes: the first chunk alone (the usual case), or several when the body came in pieces. */
  private kept: Buffer | Buffer[] | null = null;
  private keptBytes = 0;
  private readBytes = 0;
  private abort: ((error?: Error) => void) | null = null;
  private settled = false;
  private retryAfter: string | null = null;

  constructor(
    private readonly resolve: (outcome: AttemptOutcome) => void,
    private readonly timeoutMs: number,
  ) {
    this.timer = setTimeout(onAttemptTimeout, timeoutMs, this);
  }

  onConnect(abort: (error?: Error) => void): void {
    // Timed out while waiting for a connection: the request must not be written after all.
    if (this.settled) abort(RESPONSE_CUT);
    else this.abort = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[] | string[] | null): boolean {
    // 1xx informational answers come before the real one.
    if (statusCode >= 200) this.status = statusCode;
    // Only the answers that may ask for a slower pace are searched (contract §10.1).
    if ((statusCode === 429 || statusCode === 503) && rawHeaders) this.retryAfter = findRetryAfter(rawHeaders);
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.settled) return false;
    this.readBytes += chunk.length;
    if (this.keptBytes < BODY_BYTES_KEPT) {
      const piece =
        chunk.length <= BODY_BYTES_KEPT - this.keptBytes ? chunk : chunk.subarray(0, BODY_BYTES_KEPT - this.keptBytes);
      if (this.kept === null) this.kept = piece;
      else if (Array.isArray(this.kept)) this.kept.push(piece);
      else this.kept = [this.kept, piece];
      this.keptBytes += piece.length;
    }
    if (this.readBytes > RESPONSE_READ_LIMIT) {
      // Enough read: judge by what arrived and drop the connection instead of downloading more.
      this.answer();
      this.abort?.(RESPONSE_CUT);
      return false;
    }
    return true;
  }

  onComplete(): void {
    this.answer();
  }

  onError(error: Error): void {
    // Once the status line has arrived the receiver has answered; a body that then breaks off does
    // not change that answer (contract §5).
    if (this.status !== null) this.answer();
    else this.fail(describeError(error, this.timeoutMs), isTimeout(error) ? "timeout" : "refused");
  }

  timeUp(): void {
    if (this.settled) return;
    // Node's timers run on the event loop's cached clock and may fire a millisecond before the time
    // measured here: an attempt gives up after its whole timeout, never before (its durationMs says so).
    const left = this.timeoutMs - (performance.now() - this.started);
    if (left > 0) {
      this.timer = setTimeout(onAttemptTimeout, Math.ceil(left), this);
      return;
    }
    if (this.status !== null) this.answer();
    else this.fail(`Timed out after ${this.timeoutMs} ms`, "timeout");
    this.abort?.(RESPONSE_CUT);
  }

  private answer(): void {
    if (this.settled || this.status === null) return;
    const body = this.kept === null ? "" : decodeBody(Array.isArray(this.kept) ? Buffer.concat(this.kept) : this.kept);
    this.settle(judgeResponse(this.status, body), "answered");
  }

  private fail(error: string, kind: AttemptOutcome["kind"]): void {
    if (this.settled) return;
    this.settle({ ok: false, responseStatus: null, responseBody: null, error }, kind);
  }

  private settle(result: Judged, kind: AttemptOutcome["kind"]): void {
    this.settled = true;
    clearTimeout(this.timer);
    this.kept = null;
    this.resolve({
      ok: result.ok,
      startedAt: new Date(this.startedAt),
      responseStatus: result.responseStatus,
      responseBody: result.responseBody,
      durationMs: Math.round(performance.now() - this.started),
      error: result.error,
      retryAfter: this.retryAfter,
      kind,
    });
  }
}

type Judged = Pick<AttemptOutcome, "ok" | "responseStatus" | "responseBody" | "error">;

/** The first `Retry-After` value among undici's raw headers (name, value, name, value, …). */
function findRetryAfter(rawHeaders: Buffer[] | string[]): string | null {
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (String(rawHeaders[i]).toLowerCase() === "retry-after") return String(rawHeaders[i + 1]);
  }
  return null;
}

/** A status judged by contract §5: 2xx succeeds, a redirect is not followed, anything else fails. */
export function judgeResponse(statusCode: number, responseBody: string): Judged {
  if (statusCode >= 200 && statusCode < 300) return { ok: true, responseStatus: statusCode, responseBody, error: null };
  const error =
    statusCode >= 300 && statusCode < 400
      ? `Redirects are not followed (${statusCode})`
      : `Receiver answered ${statusCode}`;
  return { ok: false, responseStatus: statusCode, responseBody, error };
}

/**
 * The first bytes of a body as text of at most RESPONSE_BODY_LIMIT bytes: a cut in the middle of
 * a character, or invalid UTF-8 (each bad byte becomes a 3-byte U+FFFD), could otherwise exceed
 * the limit once re-encoded. NUL is dropped because Postgres text columns cannot hold it.
 */
export function decodeBody(bytes: Buffer): string {
  let end = Math.min(bytes.length, RESPONSE_BODY_LIMIT);
  // Step back over continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  if (end < bytes.length) {
    while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  }
  let text = bytes.subarray(0, end).toString("utf8");
  if (text.includes("\u0000")) text = text.replaceAll("\u0000", "");
  // No character takes more than 3 UTF-8 bytes per UTF-16 unit: short texts need no measuring.
  if (text.length * 3 <= RESPONSE_BODY_LIMIT) return text;
  while (Buffer.byteLength(text, "utf8") > RESPONSE_BODY_LIMIT) {
    text = Array.from(text).slice(0, -1).join("");
  }
  return text;
}

/** undici's own timeouts; the attempt's timer normally fires first, but the text must not differ. */
function isTimeout(error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code;
  return code === "UND_ERR_CONNECT_TIMEOUT" || code === "UND_ERR_HEADERS_TIMEOUT" || code === "UND_ERR_BODY_TIMEOUT";
}

/** A readable, stable error text for the attempt history. */
export function describeError(error: unknown, timeoutMs: number): string {
  if (!(error instanceof Error)) return String(error);
  if (isTimeout(error)) return `Timed out after ${timeoutMs} ms`;
  // undici's words for a connection the receiver closed or reset before its answer; Node's own
  // client (and most operators) call it a hang-up.
  if ((error as NodeJS.ErrnoException).code === "UND_ERR_SOCKET") {
    return "socket hang up: the receiver closed the connection before answering";
  }
  // Refused and unresolvable names read the same: a tenant cannot probe the worker's network.
  const refused = deliveryErrorText(error);
  if (refused !== null) return refused;
  const code = (error as NodeJS.ErrnoException).code;
  // Node reports a failed Happy Eyeballs connect as an AggregateError with an empty message.
  let message = error.message;
  if (message === "" && error.cause instanceof AggregateError) message = firstMessage(error.cause);
  if (message === "" && error instanceof AggregateError) message = firstMessage(error);
  if (!code) return message || error.name;
  if (message === "" || message === code) return code;
  return message.includes(code) ? message : `${code}: ${message}`;
}

function firstMessage(error: AggregateError): string {
  const [first] = error.errors;
  return first instanceof Error ? first.message : "";
}
