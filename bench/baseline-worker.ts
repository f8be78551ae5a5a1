// The raw BullMQ baseline's consumer, one process: takes delayed jobs at concurrency 50 and POSTs
// each to the receiver with undici (the client the worker uses, the cheapest measured in
// bench/lib/transports.ts) over keep-alive connections. No database, no signing, no bookkeeping:
// what BullMQ and HTTP alone cost on this machine.
import { Worker } from "bullmq";
import { Redis } from "ioredis";
import { Agent } from "undici";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const target = new URL(env("TARGET_URL"));
const origin = target.origin;
const path = target.pathname + target.search;
// Keep-alive by default; without the redirect interceptor a 3xx is returned, not followed. 64
// connections: more than the jobs in flight, so none waits for one.
const agent = new Agent({ connections: 64 });
const connection = new Redis(env("REDIS_URL"), { maxRetriesPerRequest: null });

const worker = new Worker<{ id: string; scheduledTime: string }>(
  env("QUEUE"),
  async (job) => {
    const { statusCode, body } = await agent.request({
      origin,
      path,
      method: "POST",
      body: JSON.stringify({ payload: '{"hello":"world"}', scheduledTime: job.data.scheduledTime }),
      headers: { "content-type": "application/json", "x-bench-id": job.data.id },
    });
    // Reading the body to its end returns the connection to the pool.
    await body.dump();
    if (statusCode < 200 || statusCode >= 300) throw new Error(`receiver answered ${statusCode}`);
  },
  { connection, prefix: env("QUEUE_PREFIX"), concurrency: Number(env("CONCURRENCY")) },
);
worker.on("failed", (job, error) => process.stderr.write(`job ${job?.id} failed: ${error.message}\n`));
await worker.waitUntilReady();

process.on("SIGTERM", () => {
  void worker
    .close()
    .then(() => connection.quit())
    .then(() => agent.destroy())
    .finally(() => process.exit(0));
});
