import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createLogger } from "@punctual/core";
import { afterEach, expect, it } from "vitest";
import { createDispatcher, type Dispatcher, type DispatcherOptions } from "./dispatcher.ts";
import { createHttpTransport } from "./http-transport.ts";
import type { AttemptOutcome } from "./transport.ts";

// The fair dispatcher over the real HTTP transport, against real receivers on loopback: turns
// between organizations, their share of the slots, the per-origin caps, the smaller cap of an origin
// that times out, and slow attempts that stop counting (contract §9, Isolation).

/** One request as a receiver saw it. */
interface Arrival {
  at: number;
  org: string;
  n: number;
  /** Which receiver got it. */
  port: number;
}

type Mode = "answer" | "hang";

interface TestReceiver {
  url: string;
  origin: string;
  port: number;
  arrivals: Arrival[];
  /** How new requests are handled: answered 200 (after `delayMs`) or left hanging. */
  mode: Mode;
  delayMs: number;
  /** Requests received and not yet answered or dropped. */
  open(): number;
  /** The most requests open at once so far. */
  readonly maxOpen: number;
  /** TCP connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];

// In the order made: receivers close first, so attempts still hanging end at once and the
// transport's close does not wait for their timeouts.
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/**
 * A node:http receiver on 127.0.0.1. Every request is recorded; it is answered 200 after
 * `delayMs`, or never while the mode is "hang".
 */
async function startReceiver(options: { mode?: Mode; delayMs?: number } = {}): Promise<TestReceiver> {
  const arrivals: Arrival[] = [];
  let open = 0;
  let maxOpen = 0;
  const server = createServer((request, response) => {
    const arrival: Arrival = {
      at: Date.now(),
      org: String(request.headers["x-org"]),
      n: Number(request.headers["x-n"]),
      port: receiver.port,
    };
    arrivals.push(arrival);
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      open -= 1;
    };
    response.on("finish", end);
    response.on("close", end);
    request.resume();
    if (receiver.mode === "hang") return;
    const answer = () => {
      if (!response.destroyed) response.writeHead(200, { "content-type": "text/plain" }).end("OK");
    };
    if (receiver.delayMs > 0) setTimeout(answer, receiver.delayMs);
    else answer();
  });
  let connections = 0;
  server.on("connection", () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: TestReceiver = {
    url: `http://127.0.0.1:${port}/hook`,
    origin: `http://127.0.0.1:${port}`,
    port,
    arrivals,
    mode: options.mode ?? "answer",
    delayMs: options.delayMs ?? 0,
    open: () => open,
    get maxOpen() {
      return maxOpen;
    },
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  cleanups.push(() => receiver.close());
  return receiver;
}

const logger = createLogger({ LOG_LEVEL: "silent" }, "test");

/**
 * A dispatcher over a real HTTP transport. The transport's own connection pools are much larger than
 * any cap under test, so every limit observed comes from the dispatcher. `dispatched`, when given,
 * gets the organization of each attempt as it is handed to the transport (the order of dispatch,
 * which arrivals on separate connections only approximate).
 */
function startDispatcher(
  options: Partial<Omit<DispatcherOptions, "transport" | "logger">> & {
    timeoutMs?: number;
    dispatched?: string[];
  } = {},
): Dispatcher {
  const { timeoutMs = 5_000, dispatched, ...rest } = options;
  const transport = createHttpTransport({ timeoutMs, allowPrivateDestinations: true, connectionsPerOrigin: 1_000 });
  const dispatcher = createDispatcher({
    transport: {
      send(request) {
        dispatched?.push(String(request.headers["x-org"]));
        return transport.send(request);
      },
      preconnect: (origin, connections) => transport.preconnect(origin, connections),
      close: () => transport.close(),
    },
    maxInFlight: 50,
    originConcurrency: 50,
    unhealthyOriginConcurrency: 2,
    logger,
    ...rest,
  });
  cleanups.push(async () => {
    dispatcher.close();
    await transport.close();
  });
  return dispatcher;
}

/** Submits `count` attempts of `org` to the receiver; their outcomes in submission order. */
function submitMany(
  dispatcher: Dispatcher,
  org: string,
  receiver: TestReceiver,
  count: number,
): Promise<AttemptOutcome>[] {
  return Array.from({ length: count }, (_, n) =>
    dispatcher.submit(org, receiver.origin, {
      url: receiver.url,
      body: "{}",
      headers: { "content-type": "application/json", "x-org": org, "x-n": String(n) },
    }),
  );
}

/** Samples `read` every few milliseconds until stopped; returns the largest value seen. */
function sampleMax(read: () => number): { stop: () => number; readonly max: number } {
  let max = read();
  const timer = setInterval(() => {
    max = Math.max(max, read());
  }, 2);
  return {
    get max() {
      return max;
    },
    stop() {
      clearInterval(timer);
      max = Math.max(max, read());
      return max;
    },
  };
}

it("serves organizations round robin: a few attempts submitted behind a long queue go out next", async () => {
  const dispatched: string[] = [];
  const busy = await startReceiver({ delayMs: 20 });
  const quiet = await startReceiver();
  const dispatcher = startDispatcher({ maxInFlight: 10, dispatched });

  const outcomesB = submitMany(dispatcher, "org-b", busy, 500);
  await expect.poll(() => busy.arrivals.length).toBeGreaterThanOrEqual(20);
  expect(dispatcher.waiting).toBeGreaterThan(400);
  const submittedA = Date.now();
  const bBeforeA = dispatched.length;
  const resultsA = await Promise.all(submitMany(dispatcher, "org-a", quiet, 5));
  expect(resultsA.every((outcome) => outcome.ok)).toBe(true);

  // B's queue is still long when A is done: A did not wait for it.
  expect(dispatcher.waiting).toBeGreaterThan(300);
  // While A waited nothing of B was dispatched: B held its share (ceil(10 / 2) = 5) and more, so
  // each slot B freed went to A. Without turns, A's 5 would have left after B's 480 others.
  const lastA = dispatched.lastIndexOf("org-a");
  expect(dispatched.slice(bBeforeA, lastA + 1).filter((org) => org === "org-b")).toEqual([]);
  expect(dispatched.slice(bBeforeA, lastA + 1)).toHaveLength(5);
  // The receivers saw the same: A's 5 arrived among B's next few.
  const lastArrivalA = Math.max(...quiet.arrivals.map((arrival) => arrival.at));
  expect(busy.arrivals.filter((arrival) => arrival.at >= submittedA && arrival.at <= lastArrivalA).length).toBeLessThan(
    2 * 10,
  );
  expect(quiet.arrivals.map((arrival) => arrival.n).sort()).toEqual([0, 1, 2, 3, 4]);

  const resultsB = await Promise.all(outcomesB);
  expect(resultsB.every((outcome) => outcome.ok)).toBe(true);
  expect(new Set(busy.arrivals.map((arrival) => arrival.n)).size).toBe(500);
});

it("takes one attempt per organization per turn", async () => {
  const dispatched: string[] = [];
  const receivers = await Promise.all([0, 1, 2].map(() => startReceiver({ delayMs: 50 })));
  const dispatcher = startDispatcher({ maxInFlight: 6, dispatched });

  // Submitted in one pass: B first, with the most.
  const outcomes = [
    ...submitMany(dispatcher, "org-b", receivers[0] as TestReceiver, 30),
    ...submitMany(dispatcher, "org-a", receivers[1] as TestReceiver, 10),
    ...submitMany(dispatcher, "org-c", receivers[2] as TestReceiver, 10),
  ];
  await expect.poll(() => dispatched.length).toBe(6);
  // Not B's share first, then A's: one each in turn.
  expect(dispatched).toEqual(["org-b", "org-a", "org-c", "org-b", "org-a", "org-c"]);
  expect((await Promise.all(outcomes)).every((outcome) => outcome.ok)).toBe(true);
  // A and C, with fewer attempts, are done long before B: B sent at most its share of the rest.
  const lastOfOthers = Math.max(dispatched.lastIndexOf("org-a"), dispatched.lastIndexOf("org-c"));
  expect(dispatched.slice(0, lastOfOthers + 1).filter((org) => org === "org-b").length).toBeLessThanOrEqual(10 + 2);
});

it("keeps an organization with hanging attempts to its share of the slots while another waits", async () => {
  const dispatched: string[] = [];
  const hanging = await startReceiver({ mode: "hang" });
  const quick = await startReceiver();
  // Nothing stops counting and no origin is capped for timing out: only the share limits B.
  const dispatcher = startDispatcher({
    maxInFlight: 10,
    unhealthyOriginConcurrency: 50,
    slowAttemptMs: 60_000,
    timeoutMs: 800,
    dispatched,
  });
  const inFlight = sampleMax(() => dispatcher.inFlight);

  submitMany(dispatcher, "org-b", hanging, 100);
  // Alone, B takes every slot.
  await expect.poll(() => hanging.arrivals.length).toBe(10);
  const outcomesA = submitMany(dispatcher, "org-a", quick, 40);
  const resultsA = await Promise.all(outcomesA);
  expect(resultsA.every((outcome) => outcome.ok)).toBe(true);

  // A waited for B's first ten to time out; from then on two organizations were waiting and B's
  // share was ceil(10 / 2) = 5: five of its attempts went out while A's 40 were sent, not more.
  const lastA = dispatched.lastIndexOf("org-a");
  expect(dispatched.slice(0, lastA + 1).filter((org) => org === "org-b")).toHaveLength(10 + 5);
  expect(inFlight.stop()).toBeLessThanOrEqual(10);
  expect(quick.arrivals).toHaveLength(40);
  // With A done, B takes the whole concurrency again.
  await expect.poll(() => hanging.open()).toBe(10);
  expect(dispatcher.waiting).toBeGreaterThan(0);
});

it("does not keep slots for organizations whose every waiting attempt is held back by an origin cap", async () => {
  const dispatched: string[] = [];
  const hanging = await Promise.all(Array.from({ length: 9 }, () => startReceiver({ mode: "hang" })));
  const quick = await startReceiver({ delayMs: 50 });
  const dispatcher = startDispatcher({ maxInFlight: 10, slowAttemptMs: 100, timeoutMs: 300, dispatched });

  // Nine organizations, each with a backlog on its own dead receiver: capped at two, the rest waits.
  for (const [n, receiver] of hanging.entries()) submitMany(dispatcher, `org-${n}`, receiver, 20);
  await expect.poll(() => dispatcher.cappedOrigins).toBe(9);
  expect(dispatcher.waiting).toBeGreaterThan(9 * 10);

  const submitted = Date.now();
  const results = await Promise.all(submitMany(dispatcher, "org-a", quick, 40));
  const tookMs = Date.now() - submitted;
  expect(results.every((outcome) => outcome.ok)).toBe(true);
  // The nine can send nothing until their attempts time out, so A may use every counted slot:
  // 40 attempts of 50 ms, about 10 at a time, not one at a time (ceil(10 / 10 organizations)).
  // The bound on the time is the one-at-a-time time: a loaded machine adds its own delays.
  expect(quick.maxOpen).toBeGreaterThanOrEqual(5);
  expect(tookMs).toBeLessThan(40 * 50);
});

it("never has more attempts in flight to one origin than originConcurrency", async () => {
  const receiver = await startReceiver({ delayMs: 20 });
  const dispatcher = startDispatcher({ maxInFlight: 50, originConcurrency: 10 });
  const inFlight = sampleMax(() => dispatcher.inFlight);

  const outcomes = await Promise.all(submitMany(dispatcher, "org-a", receiver, 200));

  expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
  expect(receiver.arrivals).toHaveLength(200);
  expect(receiver.maxOpen).toBe(10);
  expect(inFlight.stop()).toBeLessThanOrEqual(10);
  expect(dispatcher.cappedOrigins).toBe(0);
});

it("caps an origin that times out at unhealthyOriginConcurrency until it answers again", async () => {
  const receiver = await startReceiver({ mode: "hang" });
  const dispatcher = startDispatcher({ maxInFlight: 50, originConcurrency: 10, timeoutMs: 300 });

  const outcomes = submitMany(dispatcher, "org-a", receiver, 80);
  await expect.poll(() => receiver.arrivals.length).toBeGreaterThanOrEqual(10);
  await expect.poll(() => dispatcher.cappedOrigins).toBe(1);
  // The first ten were sent before anything timed out; once they are gone, at most two at a time.
  await expect.poll(() => dispatcher.inFlight).toBeLessThanOrEqual(2);
  const capped = sampleMax(() => dispatcher.inFlight);
  const arrivedWhenCapped = receiver.arrivals.length;
  await expect.poll(() => receiver.arrivals.length).toBeGreaterThanOrEqual(arrivedWhenCapped + 6);
  expect(capped.stop()).toBeLessThanOrEqual(2);
  expect(dispatcher.cappedOrigins).toBe(1);
  expect(receiver.maxOpen).toBe(10);
  // Two at a time, each pair waiting for the one before it to time out.
  const later = receiver.arrivals.slice(10).map((arrival) => arrival.at);
  for (let n = 2; n < later.length; n++) {
    expect((later[n] as number) - (later[n - 2] as number)).toBeGreaterThanOrEqual(250);
  }

  // The receiver recovers (answering after 100 ms). Attempts it already holds still time out; the
  // first answer after them lifts the cap for good.
  receiver.delayMs = 100;
  receiver.mode = "answer";
  const hung = receiver.arrivals.length;
  const hungOutcomes = await Promise.all(outcomes.slice(0, hung));
  expect(hungOutcomes.every((outcome) => outcome.kind === "timeout")).toBe(true);
  await expect.poll(() => dispatcher.cappedOrigins).toBe(0);
  const lifted = sampleMax(() => dispatcher.inFlight);
  const results = await Promise.all(outcomes.slice(hung));
  expect(results.every((outcome) => outcome.ok && outcome.kind === "answered")).toBe(true);
  expect(results.length).toBeGreaterThan(40);
  // Ten at a time again.
  expect(lifted.stop()).toBe(10);
  expect(dispatcher.cappedOrigins).toBe(0);
});

it("caps an origin that refuses connections, and counts it once", async () => {
  const gone = await startReceiver();
  await gone.close();
  const dispatcher = startDispatcher({ originConcurrency: 10 });

  const outcomes = await Promise.all([
    ...submitMany(dispatcher, "org-a", gone, 20),
    ...submitMany(dispatcher, "org-b", gone, 20),
  ]);

  expect(outcomes.every((outcome) => outcome.kind === "refused" && !outcome.ok)).toBe(true);
  expect(dispatcher.cappedOrigins).toBe(1);
});

it("stops counting slow attempts, so one organization's hanging receivers do not block another", async () => {
  // Six dead receivers: each takes a couple of attempts before its silence holds it back.
  const hanging = await Promise.all(Array.from({ length: 6 }, () => startReceiver({ mode: "hang" })));
  const quick = await startReceiver();
  const dispatcher = startDispatcher({ maxInFlight: 4, slowAttemptMs: 100, timeoutMs: 10_000 });

  const outcomesB = hanging.flatMap((receiver) => submitMany(dispatcher, "org-b", receiver, 40));
  let settledB = 0;
  for (const outcome of outcomesB) void outcome.then(() => settledB++);
  const arrivalsB = () => hanging.reduce((sum, receiver) => sum + receiver.arrivals.length, 0);
  // B has used its four slots more than once: its earlier attempts became slow and stopped counting.
  await expect.poll(arrivalsB).toBeGreaterThanOrEqual(12);

  const submitted = Date.now();
  const resultsA = await Promise.all(submitMany(dispatcher, "org-a", quick, 5));
  const tookMs = Date.now() - submitted;

  expect(resultsA.every((outcome) => outcome.ok)).toBe(true);
  // Without the slowness rule A would wait for B's attempts to time out (10 s).
  expect(tookMs).toBeLessThan(1_000);
  expect(settledB).toBe(0);
  // B's slow attempts are still in flight (they count against the total bound, not the turns).
  expect(dispatcher.inFlight).toBeGreaterThan(4);
});

it("gives an origin nothing has come back from no more attempts than it has, until something does", async () => {
  // Each answer takes 600 ms.
  const late = await startReceiver({ delayMs: 600 });
  const dispatcher = startDispatcher({ maxInFlight: 50, originConcurrency: 50, slowAttemptMs: 100 });
  const [first] = submitMany(dispatcher, "org-a", late, 1);
  await expect.poll(() => late.arrivals.length).toBe(1);
  await new Promise((resolve) => setTimeout(resolve, 150));
  // Silent for longer than SLOW_ATTEMPT_MS: one more (up to the unhealthy cap, 2), then the rest wait.
  const more = submitMany(dispatcher, "org-a", late, 10);
  await expect.poll(() => late.arrivals.length).toBe(2);
  expect(dispatcher.waiting).toBe(9);
  // Not capped as unhealthy: it has neither timed out nor refused.
  expect(dispatcher.cappedOrigins).toBe(0);

  const answeredFirst = await first;
  expect(answeredFirst?.ok).toBe(true);
  const firstBackAt = (answeredFirst?.startedAt.getTime() ?? 0) + (answeredFirst?.durationMs ?? 0);
  const outcomes = await Promise.all(more);
  expect(outcomes.every((outcome) => outcome.ok)).toBe(true);
  // The nine that waited left once the first answer came back, all together (its full cap again).
  const waited = outcomes.slice(1).map((outcome) => outcome.startedAt.getTime());
  expect(Math.min(...waited)).toBeGreaterThanOrEqual(firstBackAt - 5);
  expect(late.maxOpen).toBeGreaterThanOrEqual(10);
});

it("keeps the full origin cap for a receiver that is slow but answers", async () => {
  const slow = await startReceiver({ delayMs: 500 });
  const dispatcher = startDispatcher({ maxInFlight: 50, originConcurrency: 10, timeoutMs: 2_000 });
  const capped = sampleMax(() => dispatcher.cappedOrigins);

  const outcomes = await Promise.all(submitMany(dispatcher, "org-a", slow, 40));

  expect(outcomes.every((outcome) => outcome.ok && outcome.kind === "answered")).toBe(true);
  expect(outcomes.every((outcome) => outcome.durationMs >= 450)).toBe(true);
  expect(capped.stop()).toBe(0);
  // Ten at a time the whole way through, not two.
  expect(slow.maxOpen).toBe(10);
  const lastStart = Math.max(...outcomes.map((outcome) => outcome.startedAt.getTime()));
  const firstStart = Math.min(...outcomes.map((outcome) => outcome.startedAt.getTime()));
  expect(lastStart - firstStart).toBeLessThan(19 * 500);
});

it("resolves whenIdle only once no attempt waits for a slot and none is in flight", async () => {
  const receiver = await startReceiver({ delayMs: 300 });
  const dispatcher = startDispatcher({ maxInFlight: 2, slowAttemptMs: 60_000 });
  await dispatcher.whenIdle();

  const outcomes = submitMany(dispatcher, "org-a", receiver, 5);
  let resolved = false;
  const idle = dispatcher.whenIdle().then(() => {
    resolved = true;
  });
  await expect.poll(() => receiver.arrivals.length).toBe(2);
  expect(dispatcher.waiting).toBe(3);
  expect(resolved).toBe(false);
  await expect.poll(() => receiver.arrivals.length).toBe(5);
  // Nothing waits, but the last attempt is still in flight.
  expect(dispatcher.waiting).toBe(0);
  expect(dispatcher.inFlight).toBeGreaterThan(0);
  expect(resolved).toBe(false);
  await idle;
  expect(dispatcher.inFlight).toBe(0);
  expect((await Promise.all(outcomes)).every((outcome) => outcome.ok)).toBe(true);
  // Idle now: it resolves at once.
  await dispatcher.whenIdle();
});

it("opens ahead at most as many connections as could be in flight to the origin at once", async () => {
  const receiver = await startReceiver();
  const dispatcher = startDispatcher({ maxInFlight: 50, originConcurrency: 4 });
  dispatcher.prepare(receiver.origin, 10);
  await expect.poll(() => receiver.connections()).toBe(4);
  const few = await startReceiver();
  dispatcher.prepare(few.origin, 2);
  await expect.poll(() => few.connections()).toBe(2);
  expect(receiver.connections()).toBe(4);
});

it("opens no connection ahead to an origin capped for timing out", async () => {
  const dead = await startReceiver({ mode: "hang" });
  const alive = await startReceiver();
  const dispatcher = startDispatcher({ timeoutMs: 200 });
  const [timedOut] = await Promise.all(submitMany(dispatcher, "org-a", dead, 1));
  expect(timedOut?.kind).toBe("timeout");
  expect(dispatcher.cappedOrigins).toBe(1);
  // undici may reconnect once after the aborted request: counted from a moment later.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const connectionsBefore = dead.connections();
  dispatcher.prepare(dead.origin, 10);
  // Another origin's attempt, answered after anything the call above could have opened.
  expect((await Promise.all(submitMany(dispatcher, "org-a", alive, 1)))[0]?.ok).toBe(true);
  await new Promise((resolve) => setImmediate(resolve));
  expect(dead.connections()).toBe(connectionsBefore);
  // The same call for a healthy origin opens its connections.
  dispatcher.prepare(alive.origin, 3);
  await expect.poll(() => alive.connections()).toBe(3);
});
