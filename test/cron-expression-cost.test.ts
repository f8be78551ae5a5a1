import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp } from "../services/api/src/app.ts";
import { createWorker, type DeliveryWorker } from "../services/worker/src/worker.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "./support/context.ts";
import { type Receiver, startReceiver } from "./support/receiver.ts";

// One organization's cron expressions cannot stall the API and worker of a process (as `pnpm
// start` runs them): 100 requests sent at once with the costliest expressions (one that never
// fires, which cron-parser walks to its loop limit; February 29th, 20 runs; the same refused by a
// create and an update) delay another organization's requests and deliveries by no more than
// 50 ms beyond what 100 ordinary requests of the same routes do.
//
// The noisy requests come from a process of their own, as a remote client's would, so that this
// process spends its time serving them only. Both bursts are measured alike, one after the other,
// so that what the machine's other load does to both is not counted. A stall caused by the
// expressions happens on every try, one caused by that load does not: the bounds must hold on one
// of TRIES tries (the old walk of cron-parser to its loop limit delayed the other organization's
// requests by tens of seconds and its deliveries by seconds, on every try).

const NOISY_REQUESTS = 100;
const STALL_BOUND_MS = 50;
const TRIES = 5;
/** How long before the quiet organization's first event is due the noisy requests are sent. */
const LEAD_MS = 30;
/** When the quiet organization's events are due, from then: within the handling of the burst. */
const DELIVERIES_AFTER_MS = [0, 100, 250, 500, 1_000];

const NEVER_FIRES = "* * 31 2,4,6,9,11 *";
const LEAP_DAY = "0 0 29 2 *";
const ORDINARY = "0 9 * * 1-5";

let context: TestContext;
let server: Server;
let baseUrl: string;
let worker: DeliveryWorker;
let receiver: Receiver;
let quiet: TestOrganization;
let noisy: TestOrganization;
let noisyCronJobId: string;

beforeAll(async () => {
  // The noisy organization's requests are all answered (no 429): what they cost is the point.
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000", WORKER_HEALTH_PORT: "0" });
  server = createApp(createTestApiDeps(context).deps).listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
  receiver = await startReceiver();
  [quiet, noisy] = await Promise.all([
    createTestOrganization(context, "Quiet"),
    createTestOrganization(context, "Noisy"),
  ]);
  const created = await call(noisy, "POST", "/api/cronjobs", {
    payload: "{}",
    destination: "https://example.com/hook",
    expression: "0 0 1 1 *",
  });
  expect(created.status).toBe(200);
  noisyCronJobId = ((await created.json()) as { id: string }).id;
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await context?.close();
});

function call(org: TestOrganization, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${baseUrl}${path}`, {
    method,
    headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

interface NoisyRequest {
  method: string;
  path: string;
  body?: unknown;
}

const preview = (expression: string) =>
  `/api/cron-jobs/preview?${new URLSearchParams({ expression, timezone: "Europe/Paris", count: "20" })}`;

/** 100 requests of the preview, create and update routes, with `expression` for create and update. */
function requests(previews: string[], expression: string): NoisyRequest[] {
  return Array.from({ length: NOISY_REQUESTS }, (_, n): NoisyRequest => {
    if (n % 5 === 3) {
      const body = { payload: "{}", destination: "https://example.com/hook", expression };
      return { method: "POST", path: "/api/cronjobs", body };
    }
    if (n % 5 === 4) return { method: "PUT", path: `/api/cronjobs/${noisyCronJobId}`, body: { expression } };
    return { method: "GET", path: preview(previews[n % previews.length] as string) };
  });
}

/**
 * A client process that sends its requests all at once when told to (a line on its stdin), and
 * prints their statuses when every answer is in.
 */
const CLIENT = `
const { url, key, requests } = JSON.parse(process.env.NOISY_CLIENT);
process.stdin.once("data", async () => {
  const statuses = await Promise.all(requests.map(async ({ method, path, body }) => {
    const response = await fetch(url + path, {
      method,
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    await response.arrayBuffer();
    return response.status;
  }));
  process.stdout.write(JSON.stringify(statuses) + "\\n");
});
process.stdout.write("ready\\n");
`;

interface NoisyClient {
  /** Sends the requests; resolves with their statuses once all are answered. */
  send(): Promise<number[]>;
  stop(): void;
}

async function startNoisyClient(list: NoisyRequest[]): Promise<NoisyClient> {
  const child: ChildProcess = spawn(process.execPath, ["-e", CLIENT], {
    env: { ...process.env, NOISY_CLIENT: JSON.stringify({ url: baseUrl, key: noisy.apiKey, requests: list }) },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  expect((await lines.next()).value).toBe("ready");
  return {
    async send() {
      child.stdin?.write("go\n");
      return JSON.parse((await lines.next()).value as string) as number[];
    },
    stop: () => child.kill(),
  };
}

interface Phase {
  /** Latencies of the quiet organization's `GET /api/events`, one after another during the burst. */
  quietMs: number[];
  /** How late the quiet organization's latest event arrived at its receiver. */
  latenessMs: number;
  /** The longest delay of this process's event loop during the burst (perf_hooks). */
  loopDelayMs: number;
  /** From sending the noisy requests to their last answer. */
  burstMs: number;
  statuses: number[];
}

/**
 * The noisy organization's requests sent at once, LEAD_MS before the first of the quiet
 * organization's events is due; the quiet organization lists its events, one request after
 * another, until the noisy requests are answered.
 */
async function phase(list: NoisyRequest[]): Promise<Phase> {
  const client = await startNoisyClient(list);
  try {
    const start = Date.now() + 2_000;
    const events = await Promise.all(
      DELIVERIES_AFTER_MS.map(async (afterMs) => {
        const due = start + afterMs;
        const created = await call(quiet, "POST", "/api/events", {
          payload: JSON.stringify({ due }),
          destination: receiver.url,
          scheduledTime: new Date(due).toISOString(),
        });
        expect(created.status).toBe(200);
        return { id: ((await created.json()) as { id: string }).id, due };
      }),
    );
    // The events are prepared by the worker well before they are due; the burst begins just before.
    await expect.poll(() => Date.now() >= start - LEAD_MS, { timeout: 5_000, interval: 1 }).toBe(true);

    const loop = monitorEventLoopDelay({ resolution: 5 });
    loop.enable();
    const started = performance.now();
    const burst = client.send();
    let answered = false;
    void burst.finally(() => {
      answered = true;
    });
    // One request at a time, so that the quiet organization's own requests never queue up.
    const latencies: number[] = [];
    while (!answered || latencies.length < 10) {
      const sent = performance.now();
      const response = await call(quiet, "GET", "/api/events");
      await response.arrayBuffer();
      expect(response.status).toBe(200);
      latencies.push(performance.now() - sent);
    }
    const statuses = await burst;
    const burstMs = performance.now() - started;
    loop.disable();
    await expect.poll(() => events.every(({ id }) => receiver.deliveriesOf(id).length === 1)).toBe(true);
    const latenessMs = Math.max(...events.map(({ id, due }) => (receiver.deliveriesOf(id)[0]?.at as number) - due));
    return { quietMs: latencies, latenessMs, loopDelayMs: loop.max / 1e6, burstMs, statuses };
  } finally {
    client.stop();
  }
}

/** How much worse the costly burst was than the ordinary one, for the quiet organization. */
function delays(baseline: Phase, costly: Phase) {
  const quietMax = (phase: Phase) => Math.round(Math.max(...phase.quietMs));
  return {
    quietRequestMs: quietMax(costly) - quietMax(baseline),
    deliveryMs: costly.latenessMs - baseline.latenessMs,
    measured: {
      quietMaxMs: { ordinary: quietMax(baseline), costly: quietMax(costly) },
      latenessMs: { ordinary: baseline.latenessMs, costly: costly.latenessMs },
      loopDelayMaxMs: { ordinary: Math.round(baseline.loopDelayMs), costly: Math.round(costly.loopDelayMs) },
      burstMs: { ordinary: Math.round(baseline.burstMs), costly: Math.round(costly.burstMs) },
    },
  };
}

it("one organization's costliest cron expressions do not delay another's requests or deliveries", async () => {
  const ordinary = requests([ORDINARY], "not a cron");
  const costly = requests([NEVER_FIRES, NEVER_FIRES, LEAP_DAY], NEVER_FIRES);
  // Both kinds of request once before any is timed: compiled code, open pools, as in a server that
  // has been up for a while.
  for (const list of [ordinary, costly]) {
    const client = await startNoisyClient(list.slice(0, 20));
    await client.send().finally(client.stop);
  }
  const tries: ReturnType<typeof delays>[] = [];
  for (let n = 0; n < TRIES; n++) {
    const baseline = await phase(ordinary);
    const measured = await phase(costly);
    expect(baseline.statuses.filter((status) => status >= 500)).toEqual([]);
    // Every costly request is answered as it should be: previews 200, create and update 400.
    expect(new Set(measured.statuses)).toEqual(new Set([200, 400]));
    const delay = delays(baseline, measured);
    tries.push(delay);
    if (delay.quietRequestMs <= STALL_BOUND_MS && delay.deliveryMs <= STALL_BOUND_MS) return;
    // A stall of the expressions' own making lasts seconds on every try: no use trying again.
    if (delay.quietRequestMs > 2_000) break;
  }
  expect.fail(`the costly requests delayed the other organization: ${JSON.stringify(tries)}`);
}, 240_000);
