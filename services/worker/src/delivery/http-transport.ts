import { checkDestination, createGuardedLookup } from "@punctual/core";
import { Agent, buildConnector, type Dispatcher } from "undici";
import { HttpAttempt, refusedOutcome } from "./http-attempt.ts";
import { createPreconnections } from "./preconnections.ts";
import {
  type AttemptOutcome,
  type DeliveryHttpRequest,
  originOf,
  type Transport,
  type TransportOptions,
} from "./transport.ts";

/** Destinations whose check is remembered; a worker sends to far fewer distinct URLs than this. */
const DESTINATION_CACHE_SIZE = 4_096;

/** Where a checked destination goes, or why it may not be sent to. */
type Target = { origin: string; path: string } | { refused: string };

export interface HttpTransport extends Transport {
  /**
   * Lets requests to this exact origin past the private-address rule until the returned function is
   * called: the worker's warm-up sends through the worker's own transport to a receiver of its own
   * on loopback, so that the code a burst runs is the code the warm-up compiled.
   */
  trustOrigin(origin: string): () => void;
}

/**
 * The HTTP transport on undici (contract §5): POST only, redirects never followed, no retries at
 * this level (the queue schedules them), one hard timeout per attempt, no decompression, and
 * keep-alive pools of at most `connectionsPerOrigin` connections per origin whose DNS lookup
 * refuses private addresses at connect time.
 */
export function createHttpTransport(options: TransportOptions): HttpTransport {
  const { timeoutMs, allowPrivateDestinations } = options;
  // The guard runs on every new connection, so a name re-pointed to a private address after an
  // earlier check (DNS rebinding) is still refused. The connect timeout only bounds the socket.
  const connect = buildConnector({ lookup: createGuardedLookup(allowPrivateDestinations), timeout: timeoutMs });
  const preconnected = createPreconnections(connect);
  const agent = new Agent({
    connections: options.connectionsPerOrigin,
    // The attempt's own timer (below) covers DNS, connect, headers and body in one limit and
    // aborts the request; undici's per-phase timers would only add work and other error texts.
    headersTimeout: 0,
    bodyTimeout: 0,
    // A connection opened ahead of a burst is taken first.
    connect: (socketOptions, callback) => {
      const socket = preconnected.take(`${socketOptions.protocol}//${socketOptions.host}`);
      // Answered on a later tick, as a connection being made would be: undici takes the socket
      // only once the call that asked for it has returned.
      if (socket) process.nextTick(callback, null, socket);
      else connect(socketOptions, callback);
    },
  });
  const targets = new Map<string, Target>();
  /** Origins let past the private-address rule for now (trustOrigin). */
  const trusted = new Set<string>();

  /** The destination check, done once per distinct URL. */
  function targetOf(url: string): Target {
    let target = targets.get(url);
    if (target) return target;
    // The API's own check; its literal-address rule matters here since a literal is connected to
    // without calling `lookup`, so the guard would never see it.
    const allowPrivate = allowPrivateDestinations || (trusted.size > 0 && trusted.has(originOf(url)));
    const destination = checkDestination(url, allowPrivate);
    target = destination.ok
      ? { origin: destination.url.origin, path: destination.url.pathname + destination.url.search }
      : { refused: destination.reason };
    if (targets.size >= DESTINATION_CACHE_SIZE) targets.clear();
    targets.set(url, target);
    return target;
  }

  return {
    send(request: DeliveryHttpRequest): Promise<AttemptOutcome> {
      const target = targetOf(request.url);
      if ("refused" in target) return Promise.resolve(refusedOutcome(target.refused));
      return new Promise((resolve) => {
        const attempt = new HttpAttempt(resolve, request.timeoutMs ?? timeoutMs);
        // undici adds Content-Length (and Host) for a string body, and no Accept-Encoding: the
        // receiver's bytes arrive as sent. The legacy handler methods are used on purpose: undici
        // calls them directly, where the newer ones go through a wrapper that parses every header.
        agent.dispatch(
          {
            origin: target.origin,
            path: target.path,
            method: (request.method ?? "POST") as Dispatcher.HttpMethod,
            headers: request.headers,
            body: request.method === "GET" || request.method === "DELETE" ? null : request.body,
          },
          attempt,
        );
      });
    },
    preconnect(origin, connections) {
      const target = targetOf(origin);
      if ("refused" in target) return Promise.resolve();
      const open = (agent.stats[target.origin] as { connected?: number } | undefined)?.connected ?? 0;
      return preconnected.open(target.origin, connections - open);
    },
    trustOrigin(origin) {
      trusted.add(origin);
      return () => {
        trusted.delete(origin);
        // Checks made while it was trusted must not outlive the trust.
        targets.clear();
      };
    },
    close: () => {
      preconnected.close();
      return agent.close();
    },
  };
}
