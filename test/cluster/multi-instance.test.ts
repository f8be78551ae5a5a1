import { randomBytes } from "node:crypto";
import { eventQueuePrefixes, keySlot } from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { countDeliveries } from "../chaos/chaos-report.ts";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import {
  freePort,
  type ServiceProcess,
  startService,
  startWorkerProcess,
  waitForService,
} from "../support/processes.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { type RedisCluster, startRedisCluster } from "../support/redis-cluster.ts";

// Several processes on one Postgres and one Redis Cluster (3 masters, 3 replicas, QUEUE_SHARDS=3):
// 2 API processes take a burst of events all due at one instant, 3 worker processes deliver them.
// As the burst goes out, one worker is killed (SIGKILL) and one master too: its replica takes over.
// Every event ends Sent within a minute, none is lost, and only what was in flight on the dead
// worker may arrive twice.

const BURST = 5_000;
/**
 * What was in flight on the killed worker: its requests on the wire (WORKER_CONCURRENCY, 50) and at
 * most as many answered whose outcomes were not committed yet.
 */
const MAX_DUPLICATES = 100;

let cluster: RedisCluster;
let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;
const apis: { process: ServiceProcess; port: number }[] = [];
const workers: ServiceProcess[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  context = await createTestContext({
    REDIS_URL: "",
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: `{test-${randomBytes(6).toString("hex")}}`,
    QUEUE_SHARDS: "3",
    MAX_EVENTS_PER_MONTH: "1000000",
  });
  org = await createTestOrganization(context);
  receiver = await startReceiver();
  const env = {
    DATABASE_URL: context.config.DATABASE_URL,
    REDIS_URL: "",
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: context.config.QUEUE_PREFIX,
    QUEUE_SHARDS: "3",
    DATABASE_POOL_SIZE: "5",
    MAX_EVENTS_PER_MONTH: "1000000",
    RATE_LIMIT_PER_MINUTE: "1000000",
    ALLOW_PRIVATE_DESTINATIONS: "true",
    // A dead worker's jobs move to the others within seconds (its claimed events once its heartbeat
    // has expired, 15 s).
    JOB_LOCK_MS: "4000",
    RECONCILE_INTERVAL_MS: "1000",
    PREPARE_AHEAD_MS: "5000",
    LOG_LEVEL: "warn",
  };
  const started = await Promise.all([
    ...[0, 1].map(async () => {
      const port = await freePort();
      const api = startService("api", { ...env, PORT: String(port), HOST: "127.0.0.1" });
      await waitForService(api, `http://127.0.0.1:${port}/healthz`);
      apis.push({ process: api, port });
    }),
    ...[0, 1, 2].map(async () => workers.push((await startWorkerProcess(context.config, env)).worker)),
  ]);
  expect(started).toHaveLength(5);
}, 180_000);

afterAll(async () => {
  await Promise.all([...apis.map((api) => api.process.stop()), ...workers.map((worker) => worker.stop())]);
  await receiver?.close();
  await context?.close();
  await cluster?.stop();
});

it("delivers a burst of 5,000 due at one instant once each through 2 APIs and 3 workers, while a worker and a master die", async () => {
  // Far enough ahead for 5,000 creates on a busy machine.
  const scheduledTime = new Date(Date.now() + 40_000);
  const creating = Date.now();
  const events: { id: string; scheduledTime: Date }[] = [];
  // 50 clients at a time, alternating between the two APIs.
  for (let batch = 0; events.length < BURST; batch++) {
    const made = await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        const api = apis[(batch + index) % apis.length] as { port: number };
        const response = await fetch(`http://127.0.0.1:${api.port}/api/events`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey },
          body: JSON.stringify({
            payload: "{}",
            destination: receiver.url,
            scheduledTime: scheduledTime.toISOString(),
          }),
        });
        expect(response.status).toBe(200);
        return { id: ((await response.json()) as { id: string }).id, scheduledTime };
      }),
    );
    events.push(...made);
  }
  // Every create answered well before the instant.
  expect(Date.now(), `the creates took ${Date.now() - creating} ms`).toBeLessThan(scheduledTime.getTime() - 2_000);

  // As the burst goes out: one worker killed with its prepared and in-flight jobs, one master
  // (holding a shard's jobs or the cron and maintenance keys) killed, its replica taking over.
  await new Promise((resolve) => setTimeout(resolve, scheduledTime.getTime() + 100 - Date.now()));
  // The master of shard 0's jobs.
  const victim = await cluster.masterOfSlot(keySlot(eventQueuePrefixes(context.config)[0] as string));
  expect(victim).toBeDefined();
  const replica = await cluster.replicaOf(victim as number);
  const master = cluster.nodes.find((node) => node.port === victim);
  await (workers[0] as ServiceProcess).stop("SIGKILL");
  master?.process.kill("SIGKILL");

  await expect
    .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), {
      timeout: Math.max(1_000, scheduledTime.getTime() + 60_000 - Date.now()),
      interval: 500,
    })
    .toBe(BURST);
  await cluster.waitUntilOk();
  await new Promise((resolve) => setTimeout(resolve, 500));
  const counts = countDeliveries("2 APIs, 3 workers, a worker and a master killed", receiver, events, BURST);
  expect(counts.lost).toBe(0);
  expect(counts.duplicated).toBeLessThanOrEqual(MAX_DUPLICATES);
  // The replica took the dead master's place.
  expect(await cluster.masterPorts()).not.toContain(victim);
  expect(await cluster.masterPorts()).toContain(replica);
}, 240_000);
