// The transport comparison: one process per HTTP client puts N delivery-sized signed POSTs on the
// wire to the loopback receiver, 64 in flight, through the Transport interface: undici
// (services/worker/src/delivery/http-transport.ts, what the worker uses) against got
// (bench/lib/got-transport.ts, the same rules on the previous client). Each client runs in a fresh
// process of its own so its CPU time and RSS are its own, not the harness's.
//
// This file is both the harness side (`compareTransports`) and the client process
// (`node --import tsx bench/lib/transports.ts` with the environment below).

import { spawn } from "node:child_process";
import { createHmac, randomBytes } from "node:crypto";
import { openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createHttpTransport } from "../../services/worker/src/delivery/http-transport.ts";
import type { DeliveryHttpRequest, Transport } from "../../services/worker/src/delivery/transport.ts";
import { createGotTransport } from "./got-transport.ts";
import { repositoryRoot } from "./processes.ts";

export const TRANSPORT_CLIENTS = ["undici", "got"] as const;
export type TransportClient = (typeof TRANSPORT_CLIENTS)[number];
/** Requests in flight at once, as a worker at its default concurrency keeps them. */
export const IN_FLIGHT = 64;

/** One client at one N: the median of the runs, each run's wall time beside it. */
export interface TransportResult {
  client: TransportClient;
  n: number;
  wallMs: number;
  /** process.cpuUsage (user + system) of the client process during a run, per request. */
  cpuMsPerRequest: number;
  /** RSS of the client process after its runs at this N. */
  rssBytes: number;
  /** RSS of the same process once loaded, before any request: what the runtime and tsx take. */
  rssIdleBytes: number;
  wallRuns: number[];
  /** Requests answered 2xx over all runs, and requests sent. */
  ok: number;
  sent: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? NaN;

/** Runs every client in its own process, one after the other; resolves with their results. */
export async function compareTransports(
  receiverUrl: string,
  plan: { sizes: number[]; repeat: number; warmup: number },
  logDir: string,
  log: (message: string) => void,
): Promise<TransportResult[]> {
  const results: TransportResult[] = [];
  for (const client of TRANSPORT_CLIENTS) {
    log(`transports: ${client}, N = ${plan.sizes.join(" and ")}, ${IN_FLIGHT} in flight, ${plan.repeat}×`);
    const resultFile = join(logDir, `transport-${client}.json`);
    const logFile = join(logDir, `transport-${client}.log`);
    // Not startNode: this process is meant to exit on its own when done.
    const child = spawn(process.execPath, ["--import", "tsx", "bench/lib/transports.ts"], {
      cwd: repositoryRoot,
      env: {
        ...process.env,
        TRANSPORT_CLIENT: client,
        TARGET_URL: receiverUrl,
        SIZES: plan.sizes.join(","),
        REPEAT: String(plan.repeat),
        WARMUP: String(plan.warmup),
        RESULT_FILE: resultFile,
      },
      stdio: ["ignore", openSync(logFile, "a"), openSync(logFile, "a")],
    });
    // A client that hangs (a receiver gone, say) must not outlive the harness.
    const limit = setTimeout(() => child.kill("SIGKILL"), 300_000);
    const code = await new Promise<number | null>((done) => child.once("exit", (c) => done(c)));
    clearTimeout(limit);
    if (code !== 0) throw new Error(`transport-${client} exited with ${code}; see ${logFile}`);
    results.push(...(JSON.parse(readFileSync(resultFile, "utf8")) as TransportResult[]));
  }
  return results;
}

/**
 * N requests shaped like deliveries: a JSON body of ~150 bytes and the Standard Webhooks headers,
 * signed before the clock starts (the worker signs ahead of the instant too).
 */
function deliveries(url: string, n: number): DeliveryHttpRequest[] {
  const secret = randomBytes(24);
  const timestamp = String(Math.floor(Date.now() / 1000));
  const scheduledTime = new Date().toISOString();
  return Array.from({ length: n }, (_, i) => {
    const id = `msg_${randomBytes(12).toString("hex")}${i}`;
    const body = JSON.stringify({ payload: JSON.stringify({ order: 100_000 + i, status: "due" }), scheduledTime });
    const signature = createHmac("sha256", secret).update(`${id}.${timestamp}.${body}`).digest("base64");
    return {
      url,
      body,
      headers: {
        "content-type": "application/json",
        "user-agent": "Punctual/0.1",
        "webhook-id": id,
        "webhook-timestamp": timestamp,
        "webhook-signature": `v1,${signature}`,
      },
    };
  });
}

/** Sends every request with IN_FLIGHT lanes; resolves with the number answered 2xx. */
async function sendAll(transport: Transport, requests: DeliveryHttpRequest[]): Promise<number> {
  let next = 0;
  let ok = 0;
  const lane = async () => {
    while (next < requests.length) {
      const request = requests[next++] as DeliveryHttpRequest;
      if ((await transport.send(request)).ok) ok++;
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
  return ok;
}

async function clientMain(): Promise<void> {
  const env = (name: string) => {
    const value = process.env[name];
    if (!value) throw new Error(`${name} is required`);
    return value;
  };
  const client = env("TRANSPORT_CLIENT") as TransportClient;
  const url = env("TARGET_URL");
  const base = new URL(url).origin;
  const sizes = env("SIZES").split(",").map(Number);
  const repeat = Number(env("REPEAT"));
  const options = { timeoutMs: 10_000, allowPrivateDestinations: true, connectionsPerOrigin: IN_FLIGHT };
  const transport = client === "undici" ? createHttpTransport(options) : createGotTransport(options);
  const received = async () => ((await (await fetch(`${base}/count`)).json()) as { unique: number }).unique;

  /** One run: the receiver reset, the requests built, then only the sending measured. */
  const run = async (n: number) => {
    await fetch(`${base}/reset`, { method: "POST" });
    const requests = deliveries(url, n);
    const cpu = process.cpuUsage();
    const started = performance.now();
    const ok = await sendAll(transport, requests);
    const wallMs = performance.now() - started;
    const { user, system } = process.cpuUsage(cpu);
    const arrived = await received();
    if (arrived !== n) throw new Error(`${client}: ${arrived} of ${n} requests reached the receiver`);
    return { ok, wallMs, cpuMs: (user + system) / 1000 };
  };

  const rssIdleBytes = process.memoryUsage.rss();
  // V8 compiles the hot paths (of both the client and the receiver) before anything is measured.
  await run(Number(env("WARMUP")));
  const results: TransportResult[] = [];
  for (const n of sizes) {
    const runs = [];
    for (let i = 0; i < repeat; i++) runs.push(await run(n));
    results.push({
      client,
      n,
      wallMs: median(runs.map((r) => r.wallMs)),
      cpuMsPerRequest: median(runs.map((r) => r.cpuMs / n)),
      rssBytes: process.memoryUsage.rss(),
      rssIdleBytes,
      wallRuns: runs.map((r) => r.wallMs),
      ok: runs.reduce((sum, r) => sum + r.ok, 0),
      sent: n * repeat,
    });
  }
  await transport.close();
  writeFileSync(env("RESULT_FILE"), JSON.stringify(results));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  clientMain().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}
