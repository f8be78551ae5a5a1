import http from "node:http";
import https from "node:https";
import { performance } from "node:perf_hooks";
import {
  createGuardedLookup,
  deliveryErrorText,
  FORBIDDEN_DESTINATION_MESSAGE,
  literalHostForbidden,
  parseDestination,
} from "@punctual/core";
import got, { type Got, TimeoutError } from "got";

/** Bytes of the receiver's answer kept in the attempt history (contract §5). */
export const RESPONSE_BODY_LIMIT = 1024;
/**
 * How much of a response is read before giving up on it. Reading a small body to its end lets the
 * keep-alive socket go back to the pool; a larger one is cut off so a receiver cannot make a
 * worker download without bound.
 */
export const RESPONSE_READ_LIMIT = 64 * 1024;
/** One byte past the limit shows whether the cut at the limit splits a character. */
const BODY_BYTES_KEPT = RESPONSE_BODY_LIMIT + 1;
const DEFAULT_MAX_SOCKETS = 256;

export interface DeliveryHttpRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** What one delivery attempt produced; what the attempt history records. */
export interface AttemptOutcome {
  ok: boolean;
  /** When the request's bytes started to leave (the attempt's time). */
  startedAt: Date;
  /** The receiver's status code, or null when no response arrived. */
  responseStatus: number | null;
  /** At most the first 1024 bytes of the response body, as UTF-8; null when no response arrived. */
  responseBody: string | null;
  durationMs: number;
  error: string | null;
}

export interface SenderOptions {
  /** Hard limit for the whole attempt, from DNS lookup to the end of the response. */
  timeoutMs: number;
  allowPrivateDestinations: boolean;
  /**
   * Most attempts in flight at once (WORKER_CONCURRENCY); further sends wait their turn. Jobs may be
   * prepared in larger numbers ahead of their time, but the requests leave at this pace, so a burst
   * due at one instant goes out as a steady stream instead of one long blocking tick.
   */
  maxConcurrent?: number;
  /**
   * Most requests held open ahead of their time by `sendAfter` (WORKER_HELD_REQUESTS): each has its
   * connection made and its request started, and only its bytes are written at the instant. 0
   * holds none: every `sendAfter` waits for its instant and then sends like `send`.
   */
  maxHeld?: number;
}

export interface Sender {
  /** Sends one attempt now; never throws, a failure is an outcome. */
  send(request: DeliveryHttpRequest): Promise<AttemptOutcome>;
  /**
   * Sends one attempt `delayMs` from now, never earlier. When a hold is free the work is done at
   * once (DNS lookup, connection, TLS, got's request set-up) and at the instant only the bytes are
   * written, in one pass with every other request held for that instant: a burst due at one time
   * reaches its receivers together instead of one request after another.
   */
  sendAfter(request: DeliveryHttpRequest, delayMs: number): Promise<AttemptOutcome>;
  /**
   * Requests opened ahead of their time and not finished yet: waiting for their instant, or written
   * then and waiting for the answer. `maxHeld` bounds this number, so holds never pile up behind a
   * slow receiver.
   */
  readonly held: number;
  /** Closes the pooled sockets. */
  close(): void;
}

type Outcome = Omit<AttemptOutcome, "durationMs" | "startedAt">;

/**
 * Creates the delivery HTTP client: POST only, no redirects, no retries at this level (the queue
 * schedules them), one hard timeout, and keep-alive agents whose DNS lookup refuses private
 * addresses (contract §5).
 */
export function createSender(options: SenderOptions): Sender {
  const { timeoutMs, allowPrivateDestinations } = options;
  const maxConcurrent = options.maxConcurrent ?? Number.POSITIVE_INFINITY;
  const maxHeld = options.maxHeld ?? 0;
  const lookup = createGuardedLookup(allowPrivateDestinations);
  // Every held request owns a connection until its instant, on top of the ones in flight.
  const maxSockets = Math.max(DEFAULT_MAX_SOCKETS, maxHeld + Math.min(maxConcurrent, 1_000));
  const agentOptions = { keepAlive: true, maxSockets, lookup };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  const client = got.extend({
    agent: agents,
    // The agents already carry the lookup; got passes its own too, so set both to the same guard.
    dnsLookup: lookup,
    followRedirect: false,
    retry: { limit: 0 },
    throwHttpErrors: false,
    // Without decompression the stored body is what the receiver sent, and no size bomb can grow.
    decompress: false,
    timeout: { request: timeoutMs },
  });

  const limit = createLimiter(maxConcurrent);
  const releaseAt = createReleaseClock();
  let held = 0;

  /** The URL to send to, or why no connection may be made (an outcome, not an exception). */
  function checkDestination(request: DeliveryHttpRequest): { url: URL } | { refused: string } {
    const destination = parseDestination(request.url);
    if (!destination.ok) return { refused: destination.reason };
    // Node connects to an IP literal without calling `lookup`, so the guard would never see it.
    if (!allowPrivateDestinations && literalHostForbidden(destination.url)) {
      return { refused: FORBIDDEN_DESTINATION_MESSAGE };
    }
    return { url: destination.url };
  }

  function sendNow(
    request: DeliveryHttpRequest,
    destination: { url: URL } | { refused: string } = checkDestination(request),
  ): Promise<AttemptOutcome> {
    const attempt =
      "url" in destination ? openAttempt(destination.url, request, 0) : refusedAttempt(destination.refused);
    attempt.release();
    return attempt.outcome;
  }

  /**
   * Starts the request without writing it: got sets it up and the agent connects; the body (with
   * the headers, in one write) leaves on `release()`. The outcome's time and duration count from
   * the release. `extraTimeMs` stretches got's timeout by the wait, so the limit still counts from
   * the instant.
   */
  function openAttempt(url: URL, request: DeliveryHttpRequest, extraTimeMs: number): Attempt {
    let startedAt = Date.now();
    let started = performance.now();
    let released = false;
    let settledEarly = false;
    let resolveOutcome: (outcome: AttemptOutcome) => void = () => {};
    const outcome = new Promise<AttemptOutcome>((resolve) => {
      resolveOutcome = resolve;
    });
    let settled = false;
    const settle = (result: Outcome) => {
      if (settled) return;
      settled = true;
      if (!released) settledEarly = true;
      resolveOutcome({
        ...result,
        startedAt: new Date(startedAt),
        durationMs: Math.round(performance.now() - started),
      });
    };
    const failWith = (error: unknown) =>
      settle({ ok: false, responseStatus: null, responseBody: null, error: describeError(error, timeoutMs) });

    let stream: ReturnType<typeof client.stream.post> | undefined;
    try {
      stream = client.stream.post(url, {
        headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
        timeout: { request: timeoutMs + extraTimeMs },
      });
      collectAnswer(stream, settle, failWith);
    } catch (error) {
      failWith(error);
    }
    return {
      outcome,
      get failedEarly() {
        return settledEarly;
      },
      release() {
        released = true;
        startedAt = Date.now();
        started = performance.now();
        stream?.end(request.body);
      },
    };
  }

  async function sendAfter(request: DeliveryHttpRequest, delayMs: number): Promise<AttemptOutcome> {
    const instant = Date.now() + Math.max(0, Math.ceil(delayMs));
    const destination = checkDestination(request);
    // A hold is worth its connection only when there is time to prepare before the instant.
    if (!("url" in destination) || delayMs < MIN_HOLD_MS || held >= maxHeld) {
      await new Promise<void>((resolve) => releaseAt(instant, resolve));
      return limit(() => sendNow(request, destination));
    }
    held += 1;
    try {
      const attempt = openAttempt(destination.url, request, instant - Date.now());
      await new Promise<void>((resolve) => releaseAt(instant, resolve));
      // The held connection broke before the instant (a receiver closing an idle keep-alive
      // connection, say): the attempt starts afresh now instead of counting that as a failure.
      if (attempt.failedEarly) return await limit(() => sendNow(request, destination));
      attempt.release();
      return await attempt.outcome;
    } finally {
      held -= 1;
    }
  }

  return {
    send: (request) => limit(() => sendNow(request)),
    sendAfter,
    get held() {
      return held;
    },
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}

/** How near its instant a request is sent the plain way: too close to gain from a hold. */
const MIN_HOLD_MS = 5;

/** One request in preparation: `release()` sends it; `outcome` settles once it is answered or fails. */
interface Attempt {
  outcome: Promise<AttemptOutcome>;
  /** True when the attempt failed before its release (its connection could not be made or broke). */
  readonly failedEarly: boolean;
  release(): void;
}

function refusedAttempt(error: string): Attempt {
  let resolveOutcome: (outcome: AttemptOutcome) => void = () => {};
  const outcome = new Promise<AttemptOutcome>((resolve) => {
    resolveOutcome = resolve;
  });
  return {
    outcome,
    failedEarly: false,
    release() {
      resolveOutcome({
        ok: false,
        responseStatus: null,
        responseBody: null,
        error,
        startedAt: new Date(),
        durationMs: 0,
      });
    },
  };
}

/**
 * Reads the answer of a got stream into an outcome: the status, the first bytes of the body, and
 * no more than RESPONSE_READ_LIMIT of it.
 */
function collectAnswer(
  stream: ReturnType<Got["stream"]["post"]>,
  settle: (outcome: Outcome) => void,
  failWith: (error: unknown) => void,
): void {
  let status: number | null = null;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let readBytes = 0;
  const settleWithResponse = (statusCode: number) =>
    settle(judgeResponse(statusCode, decodeBody(Buffer.concat(kept, keptBytes))));
  stream.on("response", (response: { statusCode: number }) => {
    status = response.statusCode;
  });
  stream.on("data", (chunk: Buffer) => {
    readBytes += chunk.length;
    if (keptBytes < BODY_BYTES_KEPT) {
      const slice = chunk.subarray(0, BODY_BYTES_KEPT - keptBytes);
      kept.push(slice);
      keptBytes += slice.length;
    }
    if (readBytes > RESPONSE_READ_LIMIT && status !== null) {
      settleWithResponse(status);
      stream.destroy();
    }
  });
  stream.on("end", () => {
    if (status !== null) settleWithResponse(status);
  });
  stream.on("error", (error: unknown) => {
    // Once the status line has arrived the receiver has answered within the timeout; a body
    // that then breaks off or runs late does not change that answer (contract §5).
    if (status !== null) settleWithResponse(status);
    else failWith(error);
  });
}

/**
 * Calls each waiter at its instant (epoch ms), never before it by the wall clock. Waiters for the
 * same instant share one timer and run in one pass, so nothing else (answers being read, say) runs
 * between their writes.
 */
function createReleaseClock() {
  const waiting = new Map<number, (() => void)[]>();
  return function releaseAt(instant: number, waiter: () => void): void {
    const group = waiting.get(instant);
    if (group) {
      group.push(waiter);
      return;
    }
    const waiters = [waiter];
    waiting.set(instant, waiters);
    const fire = () => {
      // Timers run on a monotonic clock and may fire a fraction of a millisecond early by Date.now().
      const early = instant - Date.now();
      if (early > 0) {
        setTimeout(fire, early);
        return;
      }
      waiting.delete(instant);
      for (const release of waiters) release();
    };
    setTimeout(fire, instant - Date.now());
  };
}

function judgeResponse(statusCode: number, responseBody: string): Outcome {
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
function decodeBody(bytes: Buffer): string {
  let end = Math.min(bytes.length, RESPONSE_BODY_LIMIT);
  // Step back over continuation bytes (10xxxxxx) so the cut falls on a character boundary.
  if (end < bytes.length) {
    while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  }
  let text = bytes.subarray(0, end).toString("utf8").replaceAll("\u0000", "");
  while (Buffer.byteLength(text, "utf8") > RESPONSE_BODY_LIMIT) {
    text = Array.from(text).slice(0, -1).join("");
  }
  return text;
}

/** A readable, stable error text for the attempt history. */
function describeError(error: unknown, timeoutMs: number): string {
  if (error instanceof TimeoutError) return `Timed out after ${timeoutMs} ms`;
  // A refused or unresolvable name reads the same, so the history cannot probe the worker's network.
  const hidden = deliveryErrorText(error);
  if (hidden !== null) return hidden;
  if (!(error instanceof Error)) return String(error);
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

/** Runs at most `max` tasks at once; the others wait in arrival order. */
function createLimiter(max: number) {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async function limited<T>(task: () => Promise<T>): Promise<T> {
    if (active < max) active++;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      // Hand the slot straight to the next waiter, or give it back.
      const next = waiting.shift();
      if (next) next();
      else active--;
    }
  };
}
