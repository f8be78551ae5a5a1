import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { performance } from "node:perf_hooks";
import {
  buildDeliveryRequest,
  type Config,
  claimEvents,
  generateSigningSecret,
  type Logger,
  newId,
  readEventStates,
  recordAttempts,
  resolvePolicy,
} from "@punctual/core";
import type { Db } from "@punctual/db";
import type { Sender } from "./sender.ts";
import { originOf } from "./transport.ts";

// A worker's first burst after a start ran 2–3× slower than the next ones: V8 was still compiling
// the hot paths (signing, the dispatcher, undici, pg and Prisma's row handling) while the
// burst's requests waited, and the database pool opened its connections. So before a worker takes
// its first job it goes through those paths on its own: it signs WORKER_WARMUP_REQUESTS requests
// and sends them, in bursts, to a receiver of its own on loopback, and runs the claim, state and
// record statements for ids that name no event (they change nothing). A deploy just before 09:00
// then delivers the 09:00 burst as a worker that has run for a while does.

/** Requests handed to the dispatcher at once, as at a burst's instant. */
const BURST = 500;
/**
 * The round whose answers close their connections. Closing a connection for the first time changes
 * the shape of objects that the sending code was optimized for (sockets, streams, undici's client):
 * V8 then throws that code away, measured as dozens of functions of the hot path deoptimized at
 * once. Done here, early, the rounds after it compile the code again for the shapes that stay; left
 * to the warm-up's end, that code was thrown away just before the first jobs (the first burst's
 * lateness did not move measurably either way: docs/decisions.md).
 */
const CLOSING_ROUND = 1;
/** Statements run at once: opens that many pool connections before the first burst needs them. */
const STATEMENTS_AT_ONCE = 4;
const ROUNDS_OF_STATEMENTS = 5;

export interface WarmUpDeps {
  db: Db;
  config: Pick<Config, "WORKER_WARMUP_REQUESTS" | "RETRY_DELAYS_MS" | "DELIVERY_TIMEOUT_MS">;
  logger: Logger;
  /** The worker's own transport and dispatcher: the instances a burst then goes through. */
  sender: Sender;
  /** Aborted when the worker is asked to stop while warming up: no new round starts. */
  signal?: AbortSignal | undefined;
}

export interface WarmUpResult {
  requests: number;
  answered: number;
  durationMs: number;
}

/** Runs the delivery paths once over; never throws (a worker that could not warm up still starts). */
export async function warmUp(deps: WarmUpDeps): Promise<WarmUpResult> {
  const { config, logger } = deps;
  const started = performance.now();
  const requests = config.WORKER_WARMUP_REQUESTS;
  if (requests === 0) return { requests: 0, answered: 0, durationMs: 0 };
  logger.info({ requests }, "warming up: signing and sending requests to itself before taking jobs");
  const [sent, statements] = await Promise.allSettled([sendToItself(deps, requests), runStatements(deps)]);
  for (const part of [sent, statements]) {
    if (part.status === "rejected") logger.warn({ err: part.reason }, "part of the warm-up failed; starting anyway");
  }
  return {
    requests,
    answered: sent.status === "fulfilled" ? sent.value : 0,
    durationMs: performance.now() - started,
  };
}

/** Signs and sends `requests` deliveries to a receiver of this process on loopback; returns the 2xx count. */
async function sendToItself(deps: WarmUpDeps, requests: number): Promise<number> {
  const { sender } = deps;
  let round = 0;
  const server = createServer((req, res) => {
    req.resume();
    // In the round that closes its connections (CLOSING_ROUND), every answer says so.
    if (round === CLOSING_ROUND) res.setHeader("connection", "close");
    req.on("end", () => res.end("ok"));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/warm-up`;
  // Through the worker's own transport and dispatcher: V8 then optimizes the very closures a burst
  // calls (instances of their own would leave the burst's call sites to be compiled again). Their
  // loopback receiver is let past the private-address rule for the warm-up only. The dispatcher
  // forgets the warm-up's organization and origin once their attempts are over.
  const { transport, dispatcher } = sender;
  const untrust = transport.trustOrigin(originOf(url));
  const signingSecret = generateSigningSecret();
  const origin = originOf(url);
  const orgId = newId("org");
  // Built and sent as a delivery without a policy of its own is (event-attempts.ts): the same
  // arguments, the same request shape, so the burst finds these call sites compiled for it.
  const policy = resolvePolicy(null, deps.config);
  let answered = 0;
  try {
    for (let sent = 0; sent < requests && !deps.signal?.aborted; sent += BURST, round += 1) {
      const size = Math.min(BURST, requests - sent);
      // Connections opened ahead, as after a claim, then taken by the round's requests.
      await dispatcher.prepare(origin, size);
      const outcomes = Array.from({ length: size }, () => {
        const request = buildDeliveryRequest({
          webhookId: newId("evt"),
          payload: '{"warm":"up"}',
          scheduledTime: new Date(),
          signingSecret,
          previousSigningSecret: null,
          now: new Date(),
          policy,
        });
        return dispatcher.submit(orgId, origin, {
          url,
          method: request.method,
          body: request.body,
          headers: request.headers,
          timeoutMs: policy.timeoutMs,
        });
      });
      for (const outcome of await Promise.all(outcomes)) if (outcome.ok) answered += 1;
    }
  } finally {
    untrust();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  return answered;
}

/** The statements of a burst, for ids that name no event: nothing is read back or written. */
async function runStatements({ db, config, signal }: WarmUpDeps): Promise<void> {
  const maxAttempts = config.RETRY_DELAYS_MS.length + 1;
  for (let round = 0; round < ROUNDS_OF_STATEMENTS && !signal?.aborted; round++) {
    await Promise.all(
      Array.from({ length: STATEMENTS_AT_ONCE }, async () => {
        const ids = Array.from({ length: BURST }, () => newId("evt"));
        const now = new Date();
        await readEventStates(db, ids);
        // No event has these ids: the owner written is never read.
        await claimEvents(db, ids, now, now, "warm-up");
        await recordAttempts(
          db,
          ids.map((eventId) => ({
            eventId,
            at: now,
            responseStatus: 200,
            durationMs: 1,
            error: null,
            succeeded: true,
            maxAttempts,
            last: false,
          })),
        );
      }),
    );
  }
}
