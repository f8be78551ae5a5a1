/**
 * The seam between deciding *when* and *to whom* an attempt goes (the dispatcher) and putting it
 * on the wire. Every delivery attempt — first attempts, retries, cron runs — goes through one
 * Transport; the HTTP one keeps every rule of contract §5.
 */

/** Bytes of the receiver's answer kept in the attempt history (contract §5). */
export const RESPONSE_BODY_LIMIT = 1024;
/**
 * How much of a response is read before giving up on it. Reading a small body to its end lets the
 * keep-alive socket go back to the pool; a larger one is cut off so a receiver cannot make a
 * worker download without bound.
 */
export const RESPONSE_READ_LIMIT = 64 * 1024;

/** One signed request, built before its instant. */
export interface DeliveryHttpRequest {
  url: string;
  /** POST when absent; GET and DELETE send no body (theirs is the empty string). */
  method?: string | undefined;
  body: string;
  headers: Record<string, string>;
  /** The attempt's own limit (the delivery's `timeoutMs`); the transport's when absent. */
  timeoutMs?: number | undefined;
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
  /** The `Retry-After` of a 429 or 503 answer, as sent; null otherwise (contract §10.1). */
  retryAfter: string | null;
  /**
   * How the attempt ended, for destination health: `answered` (any HTTP status), `timeout` (no
   * answer within the limit), `refused` (no connection could be made: refused, reset before an
   * answer, unresolvable or forbidden name).
   */
  kind: "answered" | "timeout" | "refused";
}

export interface TransportOptions {
  /** Hard limit for the whole attempt, from DNS lookup to the end of the response. */
  timeoutMs: number;
  allowPrivateDestinations: boolean;
  /** Most connections open to one origin (scheme + host + port) at once. */
  connectionsPerOrigin: number;
}

export interface Transport {
  /**
   * Sends one attempt now; never throws (a refused destination, a network error or a timeout is an
   * outcome). The destination is checked (parseDestination, the private-address guard) here.
   */
  send(request: DeliveryHttpRequest): Promise<AttemptOutcome>;
  /**
   * Opens connections to an origin ahead of attempts due soon, so that at their instant requests go
   * out on connections already open: up to `connections` open to it in all. Never throws; a
   * destination that may not be sent to, or cannot be reached, is left to the attempts to report.
   * Resolves once the connections it opened are open or have failed.
   */
  preconnect(origin: string, connections: number): Promise<void>;
  /** Closes every pooled connection. */
  close(): Promise<void>;
}

/** The origin (scheme://host:port) of a destination URL: the unit of connection pools and caps. */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
}
