import type { Logger } from "@punctual/core";
import type { AttemptOutcome } from "./transport.ts";

// The per-origin caps of the dispatcher (dispatcher.ts): at most ORIGIN_CONCURRENCY attempts in
// flight to one origin (scheme + host + port), across organizations. An origin whose last attempt
// timed out or could not connect is capped at ORIGIN_UNHEALTHY_CONCURRENCY until it answers again
// (any HTTP status): a dead receiver holds a couple of connections, not all of them. Before any
// timeout, an origin from which nothing has come back for SLOW_ATTEMPT_MS gets no further attempts
// until something does.

/** An unhealthy origin with nothing waiting or in flight is forgotten after this long. */
const IDLE_ORIGIN_MS = 10 * 60_000;

export interface OriginState {
  readonly key: string;
  inFlight: number;
  unhealthy: boolean;
  lastUsed: number;
  /** Since when attempts have been in flight to it with none coming back; undefined when idle. */
  silentSince: number | undefined;
}

export interface OriginCapsOptions {
  /** ORIGIN_CONCURRENCY. */
  originConcurrency: number;
  /** ORIGIN_UNHEALTHY_CONCURRENCY. */
  unhealthyOriginConcurrency: number;
  /** When an unanswered attempt makes its origin silent. */
  slowAttemptMs: number;
  logger: Logger;
}

export function createOriginCaps(options: OriginCapsOptions) {
  const { originConcurrency, unhealthyOriginConcurrency, slowAttemptMs, logger } = options;
  const origins = new Map<string, OriginState>();
  let capped = 0;
  let lastPrune = Date.now();

  function judgeHealth(origin: OriginState, outcome: AttemptOutcome) {
    if (outcome.kind === "answered") {
      if (origin.unhealthy) {
        origin.unhealthy = false;
        capped -= 1;
        logger.info({ origin: origin.key }, "destination answers again; its cap is lifted");
      }
    } else if (!origin.unhealthy) {
      origin.unhealthy = true;
      capped += 1;
      logger.info(
        { origin: origin.key, reason: outcome.kind, cap: unhealthyOriginConcurrency },
        "destination timed out or refused the connection; capped until it answers again",
      );
    }
  }

  return {
    /** Origins currently capped for timing out or refusing connections. */
    get capped() {
      return capped;
    },
    /** The origin's state, made on first use. */
    stateOf(key: string): OriginState {
      let origin = origins.get(key);
      if (!origin) {
        origin = { key, inFlight: 0, unhealthy: false, lastUsed: Date.now(), silentSince: undefined };
        origins.set(key, origin);
      }
      return origin;
    },
    /** The origin's state if it has one (a new origin has its full cap). */
    find: (key: string): OriginState | undefined => origins.get(key),
    /**
     * How many attempts an origin may have in flight now. One that timed out or refused is capped;
     * one from which nothing has come back for SLOW_ATTEMPT_MS (hanging, or not answering yet) gets
     * no more than it already has, or the unhealthy cap, until something does: a dead receiver stops
     * taking slots long before its first timeout, and a slow but healthy one, whose answers keep
     * coming, keeps its full cap.
     */
    capOf(origin: OriginState | undefined, now: number): number {
      if (!origin) return originConcurrency;
      if (origin.unhealthy) return unhealthyOriginConcurrency;
      if (origin.silentSince !== undefined && now - origin.silentSince >= slowAttemptMs) {
        return Math.max(unhealthyOriginConcurrency, origin.inFlight);
      }
      return originConcurrency;
    },
    /** An attempt to the origin was sent at `at`. */
    sent(origin: OriginState, at: number) {
      origin.inFlight += 1;
      origin.silentSince ??= at;
    },
    /** An attempt to the origin came back; `waitedFor` says whether attempts still queue for it. */
    cameBack(origin: OriginState, outcome: AttemptOutcome, waitedFor: () => boolean) {
      origin.inFlight -= 1;
      origin.lastUsed = Date.now();
      // Something came back (an answer or a failure): the silence, if any, starts again from now.
      origin.silentSince = origin.inFlight === 0 ? undefined : origin.lastUsed;
      judgeHealth(origin, outcome);
      if (origin.inFlight === 0 && !origin.unhealthy && !waitedFor()) origins.delete(origin.key);
    },
    /** Forgets unhealthy origins idle for IDLE_ORIGIN_MS (checked at most that often). */
    prune(now: number, waitedFor: (origin: OriginState) => boolean) {
      if (capped === 0 || now - lastPrune <= IDLE_ORIGIN_MS) return;
      lastPrune = now;
      for (const origin of origins.values()) {
        if (origin.unhealthy && origin.inFlight === 0 && now - origin.lastUsed > IDLE_ORIGIN_MS && !waitedFor(origin)) {
          origins.delete(origin.key);
          capped -= 1;
        }
      }
    },
  };
}
