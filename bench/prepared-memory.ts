// Memory per prepared event, one process: a worker (the production code, in this process) holds N
// events taken PREPARE_AHEAD_MS ahead, then claimed and signed, and this process's live heap is
// measured after a full collection at each stage. Run by `pnpm bench` with `node --expose-gc`;
// prints one line of JSON: { idle, prepared, claimed } bytes of live heap, and N.
import {
  createEventQueue,
  createLogger,
  createRedis,
  loadConfig,
  newId,
  QUEUE_NAMES,
  systemClock,
} from "@punctual/core";
import { createDb } from "@punctual/db";
import { Queue } from "bullmq";
import pg from "pg";
import { createWorker } from "../services/worker/src/worker.ts";
import { preparedJobs } from "../test/support/prometheus.ts";
import { insertEvents } from "./lib/setup.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with node --expose-gc");
const n = Number(process.env.EVENTS ?? 10_000);
const orgId = process.env.ORG_ID ?? "";
const destination = process.env.TARGET_URL ?? "";
const config = loadConfig({ ...process.env, WORKER_HEALTH_PORT: "0", LOG_LEVEL: "warn" });
const logger = createLogger(config, "worker");
const db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
const redis = createRedis(config);
const client = new pg.Client({ connectionString: config.DATABASE_URL });
await client.connect();
const worker = createWorker({ config, db, redis, clock: systemClock, logger });
await worker.start();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Live heap after two full collections (the second frees what the first's finalizers let go). */
const liveHeap = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

await sleep(1_000);
const idle = liveHeap();
// Due well after every job is taken and read, well before PREPARE_AHEAD_MS runs out.
const due = new Date(Date.now() + 4_000 + n * 0.6);
const events = Array.from({ length: n }, () => ({ id: newId("evt"), scheduledTime: due }));
await insertEvents(client, orgId, destination, events);
const queue = new Queue(QUEUE_NAMES.events, { connection: redis, prefix: config.QUEUE_PREFIX });
const eventQueue = createEventQueue(queue, config, systemClock);
for (let i = 0; i < n; i += 1_000) await eventQueue.scheduleMany(events.slice(i, i + 1_000));
while ((await preparedJobs(worker.healthPort)) < n) await sleep(100);
// Read and waiting for their claim: let the reads settle.
await sleep(1_000);
const preparedHeap = liveHeap();
await sleep(due.getTime() - config.CLAIM_LEAD_MS / 2 - Date.now());
const claimedHeap = liveHeap();
const late = Date.now() > due.getTime();
await sleep(due.getTime() + 5_000 - Date.now());
process.stdout.write(`${JSON.stringify({ n, idle, prepared: preparedHeap, claimed: claimedHeap, late })}\n`);
await worker.stop();
await queue.close();
await client.end();
await Promise.allSettled([db.$disconnect(), redis.quit()]);
