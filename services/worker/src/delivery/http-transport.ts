import type { Socket } from "node:net";
import { performance } from "node:perf_hooks";
import { checkDestination, createGuardedLookup, deliveryErrorText } from "@punctual/core";
import { Agent, buildConnector, type Dispatcher } from "undici";
import {
  type AttemptOutcome,
  type DeliveryHttpRequest,
  originOf,
  RESPONSE_BODY_LIMIT,
  RESPONSE_READ_LIMIT,
  type Transport,
  type TransportOptions,
} from "./transport.ts";

/** One byte past the limit shows whether the cut at the limit splits a character. */
const BODY_BYTES_KEPT = RESPONSE_BODY_LIMIT + 1;
/** Destinations whose check is remembered; a worker sends to far fewer distinct URLs than this. */
const DESTINATION_CACHE_SIZE = 4_096;
/** A connection opened ahead (preconnect) that no request has taken by then is closed. */
const PRECONNECTED_IDLE_MS = 10_000;

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
  const preconnected = createPreconnected(connect);
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
        const attempt = new HttpAttempt(resolve, timeoutMs);
        // undici adds Content-Length (and Host) for a string body, and no Accept-Encoding: the
        // receiver's bytes arrive as sent. The legacy handler methods are used on purpose: undici
        // calls them directly, where the newer ones go through a wrapper that parses every header.
        agent.dispatch(
          { origin: target.origin, path: target.path, method: "POST", headers: request.headers, body: request.body },
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

/**
 * Connections opened ahead of a burst (preconnect), per origin, until the pool takes them for its
 * requests. undici's pools connect only when a request needs a connection, so without them a burst
 * to a receiver not written to for a while spends its first milliseconds connecting.
 */
function createPreconnected(connect: buildConnector.connector) {
  /** Connections ready per origin, each with its idle timer and the listener that drops it. */
  const ready = new Map<string, Map<Socket, { timer: NodeJS.Timeout; drop: () => void }>>();
  const opening = new Map<string, number>();
  let closed = false;

  /** Takes a connection out of the ready ones; false when it was not there. */
  const forget = (origin: string, socket: Socket) => {
    const sockets = ready.get(origin);
    const watch = sockets?.get(socket);
    if (!sockets || !watch) return false;
    sockets.delete(socket);
    if (sockets.size === 0) ready.delete(origin);
    clearTimeout(watch.timer);
    socket.off("close", watch.drop).off("end", watch.drop).off("error", watch.drop);
    return true;
  };

  return {
    /**
     * Opens connections until `more` beyond those already open or opening ahead are open; resolves
     * once the ones it opened are open or have failed.
     */
    open(origin: string, more: number): Promise<void> {
      const wanted = more - (ready.get(origin)?.size ?? 0) - (opening.get(origin) ?? 0);
      if (closed || wanted <= 0) return Promise.resolve();
      const url = new URL(origin);
      // Literal IPv6 hosts come bracketed in URLs; sockets take them bare, as undici passes them.
      const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
      opening.set(origin, (opening.get(origin) ?? 0) + wanted);
      const opened = Array.from(
        { length: wanted },
        () =>
          new Promise<void>((resolve) => {
            connect(
              {
                host: url.host,
                hostname,
                protocol: url.protocol,
                port: url.port,
                servername: undefined,
                localAddress: undefined,
              },
              (error, connected) => {
                opening.set(origin, (opening.get(origin) ?? 1) - 1);
                resolve();
                if (error || !connected) return;
                const socket = connected as Socket;
                if (closed) return void socket.destroy();
                const drop = () => {
                  if (forget(origin, socket)) socket.destroy();
                };
                // Closed by the receiver, broken, or never taken: no request will be written on it.
                socket.once("close", drop).once("end", drop).once("error", drop);
                const sockets = ready.get(origin) ?? new Map();
                sockets.set(socket, { timer: setTimeout(drop, PRECONNECTED_IDLE_MS).unref(), drop });
                ready.set(origin, sockets);
              },
            );
          }),
      );
      return Promise.all(opened).then(() => undefined);
    },
    /** A connection opened ahead to `origin`, now the pool's; undefined when there is none. */
    take(origin: string): Socket | undefined {
      const sockets = ready.get(origin);
      if (!sockets) return undefined;
      for (const socket of [...sockets.keys()]) {
        forget(origin, socket);
        if (!socket.destroyed && socket.readyState === "open") return socket;
        socket.destroy();
      }
      return undefined;
    },
    close() {
      closed = true;
      for (const sockets of [...ready.values()]) for (const { drop } of [...sockets.values()]) drop();
    },
  };
}

function refusedOutcome(error: string): AttemptOutcome {
  return {
    ok: false,
    startedAt: new Date(),
    responseStatus: null,
    responseBody: null,
    durationMs: 0,
    error,
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
class HttpAttempt implements Dispatcher.DispatchHandler {
  private readonly startedAt = Date.now();
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;
  private status: number | null = null;
  /** The kept bytes: the first chunk alone (the usual case), or several when the body came in pieces. */
  private kept: Buffer | Buffer[] | null = null;
  private keptBytes = 0;
  private readBytes = 0;
  private abort: ((error?: Error) => void) | null = null;
  private settled = false;

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

  onHeaders(statusCode: number): boolean {
    // 1xx informational answers come before the real one.
    if (statusCode >= 200) this.status = statusCode;
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
      kind,
    });
  }
}

type Judged = Pick<AttemptOutcome, "ok" | "responseStatus" | "responseBody" | "error">;

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
