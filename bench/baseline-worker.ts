// The raw BullMQ baseline's consumer, one process: takes delayed jobs at concurrency 50 and POSTs
// each to the receiver with got over keep-alive sockets. No database, no signing, no bookkeeping:
// what BullMQ and HTTP alone cost on this machine.
import http from "node:http";
import { Worker } from "bullmq";
import got from "got";
import { Redis } from "ioredis";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};

const target = env("TARGET_URL");
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const client = got.extend({ agent: { http: agent }, retry: { limit: 0 }, followRedirect: false });
const connection = new Redis(env("REDIS_URL"), { maxRetriesPerRequest: null });

const worker = new Worker<{ id: string; scheduledTime: string }>(
  env("QUEUE"),
  async (job) => {
    await client.post(target, {
      body: JSON.stringify({ payload: '{"hello":"world"}', scheduledTime: job.data.scheduledTime }),
      headers: { "content-type": "application/json", "x-bench-id": job.data.id },
    });
  },
  { connection, prefix: env("QUEUE_PREFIX"), concurrency: Number(env("CONCURRENCY")) },
);
worker.on("failed", (job, error) => process.stderr.write(`job ${job?.id} failed: ${error.message}\n`));
await worker.waitUntilReady();

process.on("SIGTERM", () => {
  void worker
    .close()
    .then(() => connection.quit())
    .finally(() => {
      agent.destroy();
      process.exit(0);
    });
});
