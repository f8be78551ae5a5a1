import { setTimeout as sleep } from "node:timers/promises";
import { retryAfterMs } from "./errors.ts";

/** How a request refused with 429 Too Many Requests is sent again. */
export interface RetryOptions {
  /** How many times one request is sent again after a 429; 0 sends it once. Default 2. */
  retries?: number;
  /**
   * The longest wait before one retry, in milliseconds. A 429 whose `Retry-After` asks for longer is
   * thrown at once rather than waited for. Default 60 000, which covers Punctual's default block
   * (`RATE_LIMIT_BLOCK_SECONDS`, 60 s).
   */
  maxDelayMs?: number;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { retries: 2, maxDelayMs: 60_000 };

export type Fetch = (request: Request) => Promise<Response>;

/**
 * Wraps `fetch` so that a 429 carrying `Retry-After` is sent again after that delay, at most
 * `retries` times. Only 429 is retried: Punctual refuses it before the request does anything (the
 * rate limit is checked in front of every handler, the test-delivery budget before the delivery is
 * sent), so sending it again cannot create an event twice. A 429 without `Retry-After`, or asking
 * for longer than `maxDelayMs`, is handed back as it is, and so is the last one. The wait ends early
 * (rejecting) when the request's signal is aborted.
 */
export function retryingFetch(fetch: Fetch, options: RetryOptions | false | undefined): Fetch {
  if (options === false) return fetch;
  const { retries, maxDelayMs } = { ...DEFAULT_RETRY, ...options };
  if (!Number.isInteger(retries) || retries < 0) throw new RangeError("retry.retries must be an integer >= 0");
  if (!(maxDelayMs >= 0)) throw new RangeError("retry.maxDelayMs must be >= 0");
  if (retries === 0) return fetch;
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      // Each try sends a copy: a body can be read only once, and the next try needs it again.
      const response = await fetch(attempt < retries ? request.clone() : request);
      if (response.status !== 429 || attempt >= retries) return response;
      const delayMs = retryAfterMs(response.headers.get("retry-after"));
      if (delayMs === undefined || delayMs > maxDelayMs) return response;
      // The refused answer's body is not needed; reading it to the end frees the connection.
      await response.arrayBuffer();
      await sleep(delayMs, undefined, { signal: request.signal }).catch((error: unknown) => {
        // As fetch itself does when aborted: reject with the signal's reason.
        throw request.signal.aborted ? request.signal.reason : error;
      });
    }
  };
}
