// A got-based Transport, for the transport comparison only (bench/lib/transports.ts): the same
// interface and the same contract §5 rules as services/worker/src/delivery/http-transport.ts, on
// the client the worker used before, so the two can be measured side by side.
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
import { decodeBody, describeError, judgeResponse } from "../../services/worker/src/delivery/http-attempt.ts";
import {
  type AttemptOutcome,
  type DeliveryHttpRequest,
  RESPONSE_BODY_LIMIT,
  RESPONSE_READ_LIMIT,
  type Transport,
  type TransportOptions,
} from "../../services/worker/src/delivery/transport.ts";

const BODY_BYTES_KEPT = RESPONSE_BODY_LIMIT + 1;

export function createGotTransport(options: TransportOptions): Transport {
  const { timeoutMs, allowPrivateDestinations } = options;
  const lookup = createGuardedLookup(allowPrivateDestinations);
  // maxSockets is per host:port in Node's agents: the per-origin cap.
  const agentOptions = { keepAlive: true, maxSockets: options.connectionsPerOrigin, lookup };
  const agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  const client = got.extend({
    agent: agents,
    // got passes its own lookup to the agent too: the same guard in both places.
    dnsLookup: lookup,
    followRedirect: false,
    retry: { limit: 0 },
    throwHttpErrors: false,
    decompress: false,
    timeout: { request: timeoutMs },
  });

  function send(request: DeliveryHttpRequest): Promise<AttemptOutcome> {
    const destination = parseDestination(request.url);
    const refused = !destination.ok
      ? destination.reason
      : !allowPrivateDestinations && literalHostForbidden(destination.url)
        ? FORBIDDEN_DESTINATION_MESSAGE
        : null;
    if (refused !== null || !destination.ok) {
      return Promise.resolve({
        ok: false,
        startedAt: new Date(),
        responseStatus: null,
        responseBody: null,
        durationMs: 0,
        error: refused ?? FORBIDDEN_DESTINATION_MESSAGE,
        retryAfter: null,
        kind: "refused",
      });
    }
    return new Promise((resolve) => {
      const startedAt = new Date();
      const started = performance.now();
      let status: number | null = null;
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let readBytes = 0;
      let settled = false;
      const settle = (
        result: Pick<AttemptOutcome, "ok" | "responseStatus" | "responseBody" | "error">,
        kind: AttemptOutcome["kind"],
      ) => {
        if (settled) return;
        settled = true;
        resolve({ ...result, startedAt, durationMs: Math.round(performance.now() - started), retryAfter: null, kind });
      };
      const answer = () => {
        if (status !== null) settle(judgeResponse(status, decodeBody(Buffer.concat(kept, keptBytes))), "answered");
      };
      const stream = client.stream.post(destination.url, {
        headers: request.headers,
        body: request.body,
      });
      stream.on("response", (response: { statusCode: number }) => {
        status = response.statusCode;
      });
      stream.on("data", (chunk: Buffer) => {
        readBytes += chunk.length;
        if (keptBytes < BODY_BYTES_KEPT) {
          const piece = chunk.subarray(0, BODY_BYTES_KEPT - keptBytes);
          kept.push(piece);
          keptBytes += piece.length;
        }
        if (readBytes > RESPONSE_READ_LIMIT) {
          answer();
          stream.destroy();
        }
      });
      stream.on("end", answer);
      stream.on("error", (error: Error) => {
        // Once the status arrived, a body that breaks off or runs late does not change the answer.
        if (status !== null) return answer();
        const timedOut = error instanceof TimeoutError;
        settle(
          {
            ok: false,
            responseStatus: null,
            responseBody: null,
            error: timedOut ? `Timed out after ${timeoutMs} ms` : describeError(error, timeoutMs),
          },
          timedOut ? "timeout" : "refused",
        );
      });
    });
  }

  return {
    send,
    // got's agents connect when a request needs a connection; the comparison sends without opening ahead.
    async preconnect() {},
    async close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
