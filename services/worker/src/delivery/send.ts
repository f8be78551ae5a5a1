import http from "node:http";
import https from "node:https";
import { performance } from "node:perf_hooks";
import {
  createGuardedLookup,
  FORBIDDEN_DESTINATION_MESSAGE,
  literalHostForbidden,
  parseDestination,
} from "@punctual/core";
import got, { TimeoutError } from "got";

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
  maxSockets?: number;
  /**
   * Most attempts in flight at once (WORKER_CONCURRENCY); further sends wait their turn. Jobs may be
   * prepared in larger numbers ahead of their time, but the requests leave at this pace, so a burst
   * due at one instant goes out as a steady stream instead of one long blocking tick.
   */
  maxConcurrent?: number;
}

export interface Sender {
  /** Sends one attempt; never throws, a failure is an outcome. */
  send(request: DeliveryHttpRequest): Promise<AttemptOutcome>;
  /** Closes the pooled sockets. */
  close(): void;
}

type Outcome = Omit<AttemptOutcome, "durationMs">;

/**
 * Creates the delivery HTTP client: POST only, no redirects, no retries at this level (the queue
 * schedules them), one hard timeout, and keep-alive agents whose DNS lookup refuses private
 * addresses (contract §5).
 */
export function createSender(options: SenderOptions): Sender {
  const { timeoutMs, allowPrivateDestinations } = options;
  const lookup = createGuardedLookup(allowPrivateDestinations);
  const agentOptions = { keepAlive: true, maxSockets: options.maxSockets ?? DEFAULT_MAX_SOCKETS, lookup };
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

  const limit = createLimiter(options.maxConcurrent ?? Number.POSITIVE_INFINITY);

  function sendNow(request: DeliveryHttpRequest): Promise<AttemptOutcome> {
    const started = performance.now();
    const finish = (outcome: Outcome): AttemptOutcome => ({
      ...outcome,
      durationMs: Math.round(performance.now() - started),
    });
    const refuse = (error: string) => finish({ ok: false, responseStatus: null, responseBody: null, error });

    const destination = parseDestination(request.url);
    if (!destination.ok) return Promise.resolve(refuse(destination.reason));
    // Node connects to an IP literal without calling `lookup`, so the guard would never see it.
    if (!allowPrivateDestinations && literalHostForbidden(destination.url)) {
      return Promise.resolve(refuse(FORBIDDEN_DESTINATION_MESSAGE));
    }

    return new Promise<AttemptOutcome>((resolve) => {
      let settled = false;
      let status: number | null = null;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let readBytes = 0;
      const settle = (outcome: Outcome) => {
        if (settled) return;
        settled = true;
        resolve(finish(outcome));
      };
      const settleWithResponse = (statusCode: number) =>
        settle(judgeResponse(statusCode, decodeBody(Buffer.concat(kept, keptBytes))));

      let stream: ReturnType<typeof client.stream.post>;
      try {
        stream = client.stream.post(destination.url, { body: request.body, headers: request.headers });
      } catch (error) {
        settle({ ok: false, responseStatus: null, responseBody: null, error: describeError(error, timeoutMs) });
        return;
      }
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
        else settle({ ok: false, responseStatus: null, responseBody: null, error: describeError(error, timeoutMs) });
      });
    });
  }

  return {
    send: (request) => limit(() => sendNow(request)),
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
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
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  if (code === "EDESTINATIONFORBIDDEN") return FORBIDDEN_DESTINATION_MESSAGE;
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
