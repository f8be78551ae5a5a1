import { randomBytes } from "node:crypto";
import {
  createEvent,
  createEventQueues,
  type EventJobData,
  eventQueuePrefixes,
  eventShardOf,
  keySlot,
  loadConfig,
} from "@punctual/core";
import type { Queue } from "bullmq";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type RunningApi, startApi } from "../../services/api/src/server.ts";
import { createWorker, type DeliveryWorker } from "../../services/worker/src/worker.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { sample } from "../support/prometheus.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { type RedisCluster, startRedisCluster } from "../support/redis-cluster.ts";

// QUEUE_SHARDS=3 on a cluster of 3 masters: each shard's queue under a hash tag of its own, on a
// master of its own, an event's job in the shard its id picks; the API adds there, workers that
// each consume some of the shards deliver every event once, the reconciler checks each shard.

const ADMIN_TOKEN = "sec-Ws4Kp9Tz2Ry6Lm3Nq8Vb";
const SHARDS = 3;
const EVENTS = 300;

let cluster: RedisCluster;
let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;
let api: RunningApi;
const workers: DeliveryWorker[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  context = await createTestContext({
    REDIS_URL: "",
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: `{test-${randomBytes(6).toString("hex")}}`,
    QUEUE_SHARDS: String(SHARDS),
    ADMIN_TOKEN,
    WORKER_HEALTH_PORT: "0",
    RECONCILE_INTERVAL_MS: "500",
    PREPARE_AHEAD_MS: "1000",
    RATE_LIMIT_PER_MINUTE: "100000",
    MAX_EVENTS_PER_MONTH: "100000",
  });
  org = await createTestOrganization(context);
  receiver = await startReceiver();
  api = await startApi({ ...context.config, PORT: 0, HOST: "127.0.0.1" }, context.logger);
}, 120_000);

afterAll(async () => {
  await Promise.all(workers.map((worker) => worker.stop()));
  await api?.stop();
  await receiver?.close();
  await context?.close();
  await cluster?.stop();
});

const url = (path: string) => `http://127.0.0.1:${api.port}${path}`;

it("derives one hash tag per shard from the prefix's, and keeps the single queue's keys with one shard", () => {
  expect(eventQueuePrefixes({ QUEUE_PREFIX: "{punctual}", QUEUE_SHARDS: 1 })).toEqual(["{punctual}"]);
  expect(eventQueuePrefixes({ QUEUE_PREFIX: "punctual", QUEUE_SHARDS: 2 })).toEqual(["punctual-0", "punctual-1"]);
  const prefixes = eventQueuePrefixes({ QUEUE_PREFIX: "{punctual}-prod", QUEUE_SHARDS: 4 });
  expect(prefixes).toHaveLength(4);
  for (const [shard, prefix] of prefixes.entries()) {
    expect(prefix).toMatch(new RegExp(`^\\{punctual-${shard}(-\\d+)?\\}-prod$`));
    // Each in its own quarter of the slots.
    expect(Math.floor(keySlot(prefix) / 4096)).toBe(shard);
  }
  expect(() => loadConfig({ QUEUE_SHARDS: "2", WORKER_SHARDS: "1,2" })).toThrow(
    /WORKER_SHARDS: shard 2 does not exist: QUEUE_SHARDS=2 makes shards 0 to 1/,
  );
  expect(loadConfig({ QUEUE_SHARDS: "3", WORKER_SHARDS: "2, 0" }).WORKER_SHARDS).toEqual([0, 2]);
});

it("spreads 300 events' jobs over the three masters, and workers consuming some shards each deliver every event once", async () => {
  const scheduledTime = new Date(Date.now() + 10_000).toISOString();
  const ids: string[] = [];
  for (let batch = 0; batch < EVENTS / 50; batch++) {
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        const response = await fetch(url("/api/events"), {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": org.apiKey },
          body: JSON.stringify({ payload: JSON.stringify({ batch, index }), destination: receiver.url, scheduledTime }),
        });
        expect(response.status).toBe(200);
        return ((await response.json()) as { id: string }).id;
      }),
    );
    ids.push(...answers);
  }

  // Each create answered its own event.
  expect(new Set(ids).size).toBe(EVENTS);
  // Where the jobs are: each shard's queue, its slot, the master holding that slot and its keys.
  const queues = shardQueues();
  // A create whose queue add outlasts the API's queue timeout is answered 200 and its add lands a
  // moment later (a loaded machine): every job is there once the adds have settled.
  await expect
    .poll(
      async () =>
        (await Promise.all(queues.map((queue) => queue.getJobCountByTypes("delayed")))).reduce((a, b) => a + b, 0),
      { timeout: 10_000 },
    )
    .toBe(EVENTS);
  const masters = await cluster.masterPorts();
  expect(masters).toHaveLength(SHARDS);
  const rows = [];
  for (const [shard, prefix] of eventQueuePrefixes(context.config).entries()) {
    const slot = keySlot(prefix);
    const keysOn = await Promise.all(
      masters.map(async (port) => Number(await cluster.cli(port, "cluster", "countkeysinslot", String(slot)))),
    );
    const owner = masters[keysOn.findIndex((keys) => keys > 0)];
    const delayed = await (queues[shard] as Queue<EventJobData>).getJobCountByTypes("delayed");
    const expected = ids.filter((id) => eventShardOf(id, SHARDS) === shard).length;
    rows.push({ shard, prefix, slot, master: owner, keysInSlot: Math.max(...keysOn), delayed, expected });
  }
  const dbsize = Object.fromEntries(
    await Promise.all(masters.map(async (port) => [port, Number(await cluster.cli(port, "dbsize"))] as const)),
  );
  console.log("event jobs per shard and master (QUEUE_SHARDS=3, 3 masters)");
  console.table(rows);
  console.table(dbsize);
  // Each shard on a master of its own, holding its own events' jobs: about a third each.
  expect(new Set(rows.map((row) => row.master)).size).toBe(SHARDS);
  expect(rows.reduce((sum, row) => sum + row.delayed, 0)).toBe(EVENTS);
  for (const row of rows) {
    expect(row.delayed).toBe(row.expected);
    expect(row.delayed).toBeGreaterThan(EVENTS / SHARDS / 2);
    // A job is a hash plus its place in the delayed set; the slot holds the queue's few keys beside them.
    expect(row.keysInSlot).toBeGreaterThanOrEqual(row.delayed);
    expect(dbsize[row.master as number]).toBeGreaterThanOrEqual(row.keysInSlot);
  }

  // Two workers, each consuming some of the shards.
  for (const shards of [[0, 1], [2]]) {
    const worker = createWorker({
      ...createTestApiDeps(context).deps,
      config: { ...context.config, WORKER_SHARDS: shards },
    });
    await worker.start();
    workers.push(worker);
  }
  await expect
    .poll(() => context.db.event.count({ where: { id: { in: ids }, status: "Sent" } }), { timeout: 30_000 })
    .toBe(EVENTS);
  for (const id of ids) expect(receiver.deliveriesOf(id)).toHaveLength(1);
  for (const id of ids) expect(receiver.deliveriesOf(id)[0]?.at).toBeGreaterThanOrEqual(Date.parse(scheduledTime));
}, 90_000);

it("re-queues in its own shard each event that lost its job, through the reconciler", async () => {
  // Committed but never queued, as when Redis failed at create.
  const events = await Promise.all(
    Array.from({ length: 9 }, async () => {
      const { event } = await createEvent(
        context.db,
        { orgId: org.orgId, destination: receiver.url, scheduledTime: new Date(Date.now() + 3_000), payload: "{}" },
        new Date(),
        context.config.MAX_EVENTS_PER_MONTH,
      );
      return event;
    }),
  );
  if (workers.length === 0) {
    const worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    workers.push(worker);
  }
  await expect
    .poll(() => context.db.event.count({ where: { id: { in: events.map((e) => e.id) }, status: "Sent" } }))
    .toBe(events.length);
  for (const event of events) expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
  // Each job was added to the event's own shard.
  const queues = shardQueues();
  for (const event of events) {
    const shard = eventShardOf(event.id, SHARDS);
    expect(await (queues[shard] as Queue<EventJobData>).getJob(`event-${event.id}`)).toBeDefined();
  }
}, 60_000);

it("shows each shard in service health, the metrics and Bull Board", async () => {
  const health = await fetch(url("/api/admin/service-health"), { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(health.status).toBe(200);
  const body = (await health.json()) as {
    queues: { events: Record<string, number> };
    eventShards: { shard: number; prefix: string; delayed: number }[];
  };
  expect(body.eventShards.map((shard) => [shard.shard, shard.prefix])).toEqual(
    eventQueuePrefixes(context.config).map((prefix, shard) => [shard, prefix]),
  );
  expect(body.queues.events.delayed).toBe(body.eventShards.reduce((sum, shard) => sum + shard.delayed, 0));

  const metrics = await (await fetch(url("/metrics"))).text();
  for (let shard = 0; shard < SHARDS; shard++) {
    expect(sample(metrics, "punctual_queue_jobs", { queue: `events-${shard}`, state: "delayed" })).toBeDefined();
  }

  const board = await fetch(url("/admin/queues/api/queues"), {
    headers: { authorization: `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString("base64")}` },
  });
  expect(board.status).toBe(200);
  const shown = ((await board.json()) as { queues: { name: string }[] }).queues.map((queue) => queue.name).sort();
  expect(shown).toEqual(["cron", "maintenance", "shard-0.events", "shard-1.events", "shard-2.events"]);
});

/** Every shard's event queue, for the test's own reads (closed with the context). */
function shardQueues(): Queue<EventJobData>[] {
  const made = createEventQueues(context.redis, context.config);
  context.queues.push(...made);
  return made;
}
