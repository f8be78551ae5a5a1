import { randomBytes } from "node:crypto";
import {
  createCronJob,
  createEvent,
  cronSchedulerId,
  eventChangesChannel,
  hashTagOf,
  loadConfig,
  QUEUE_NAMES,
} from "@punctual/core";
import { Cluster } from "ioredis";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../services/api/src/app.ts";
import { createWorker, type DeliveryWorker } from "../../services/worker/src/worker.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  fireEverySecondBesideReconciler,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { exitOf, startService } from "../support/processes.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { type RedisCluster, startRedisCluster } from "../support/redis-cluster.ts";

// Punctual on a real Redis Cluster (3 masters, 3 replicas): every Redis use — BullMQ's delayed
// jobs, cron schedulers and maintenance, the rate limiter, the heartbeats, the event-change
// channel — works when REDIS_CLUSTER_NODES is set and the prefix holds a hash tag.

const ADMIN_TOKEN = "sec-Qv7Tn2Lw9Rk4Xb8Mz3Hc";

let cluster: RedisCluster;
let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;
let worker: DeliveryWorker;

beforeAll(async () => {
  cluster = await startRedisCluster();
  context = await createTestContext({
    REDIS_URL: "",
    REDIS_CLUSTER_NODES: cluster.seeds,
    QUEUE_PREFIX: `{test-${randomBytes(6).toString("hex")}}`,
    ADMIN_TOKEN,
    WORKER_HEALTH_PORT: "0",
    RECONCILE_INTERVAL_MS: "500",
    // Events a few seconds ahead wait as delayed jobs before a worker prepares them.
    PREPARE_AHEAD_MS: "1000",
  });
  org = await createTestOrganization(context);
  receiver = await startReceiver();
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await receiver?.close();
  await context?.close();
  await cluster?.stop();
});

describe("configuration", () => {
  it("refuses a cluster with a prefix that has no hash tag, or with REDIS_URL set too, naming the setting", () => {
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: cluster.seeds, QUEUE_PREFIX: "punctual" })).toThrow(
      /QUEUE_PREFIX: must contain a hash tag such as \{punctual\} when REDIS_CLUSTER_NODES is set/,
    );
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: cluster.seeds, QUEUE_PREFIX: "{}x" })).toThrow(/QUEUE_PREFIX/);
    expect(() =>
      loadConfig({ REDIS_CLUSTER_NODES: cluster.seeds, QUEUE_PREFIX: "{p}", REDIS_URL: "redis://127.0.0.1:6379" }),
    ).toThrow(/REDIS_URL: must be unset when REDIS_CLUSTER_NODES is set/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: "127.0.0.1", QUEUE_PREFIX: "{p}" })).toThrow(
      /REDIS_CLUSTER_NODES: must be a comma-separated list of host:port seed nodes/,
    );
    const config = loadConfig({
      REDIS_CLUSTER_NODES: "rediss://punctual:s%40cret@10.0.0.1:7000, [::1]:7001",
      QUEUE_PREFIX: "{p}",
    });
    expect(config.REDIS_CLUSTER_NODES).toEqual({
      nodes: [
        { host: "10.0.0.1", port: 7000 },
        { host: "::1", port: 7001 },
      ],
      username: "punctual",
      password: "s@cret",
      tls: true,
    });
    expect(hashTagOf(context.config.QUEUE_PREFIX)).toBe(context.config.QUEUE_PREFIX.slice(1, -1));
  });

  it("stops an API start on a cluster whose QUEUE_PREFIX has no hash tag, with the message", async () => {
    const api = startService("api", {
      DATABASE_URL: context.config.DATABASE_URL,
      REDIS_URL: "",
      REDIS_CLUSTER_NODES: cluster.seeds,
      QUEUE_PREFIX: "punctual",
      PORT: "0",
    });
    expect(await exitOf(api)).not.toBe(0);
    expect(api.output()).toContain("QUEUE_PREFIX: must contain a hash tag such as {punctual}");
  });
});

describe("on the cluster", () => {
  it("connects through a Cluster client", () => {
    expect(context.redis).toBeInstanceOf(Cluster);
  });

  it("delivers events created through the API once each, after they waited as delayed jobs", async () => {
    const { deps, queue } = createTestApiDeps(context);
    const app = createApp(deps);
    const scheduledTime = new Date(Date.now() + 4_000).toISOString();
    const ids: string[] = [];
    for (let index = 0; index < 20; index++) {
      const response = await request(app)
        .post("/api/events")
        .set("x-api-key", org.apiKey)
        .send({ payload: JSON.stringify({ index }), destination: receiver.url, scheduledTime });
      expect(response.status).toBe(200);
      ids.push(response.body.id);
    }
    expect(await queue.getJobCountByTypes("delayed")).toBeGreaterThanOrEqual(20);
    await expect
      .poll(() => context.db.event.count({ where: { id: { in: ids }, status: "Sent" } }), { timeout: 20_000 })
      .toBe(20);
    for (const id of ids) expect(receiver.deliveriesOf(id)).toHaveLength(1);
    for (const id of ids) {
      const [delivery] = receiver.deliveriesOf(id);
      expect(delivery?.at).toBeGreaterThanOrEqual(Date.parse(scheduledTime));
    }
  });

  it("fires a cron job's scheduler and delivers its runs", async () => {
    const job = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination: receiver.url, payload: "{}" },
      new Date(),
      10,
    );
    // The reconciler runs every 500 ms here (for the re-queue case below).
    const cronQueue = await fireEverySecondBesideReconciler(context, job.id);
    await expect
      .poll(() => context.db.cronRun.count({ where: { cronJobId: job.id, status: "Sent" } }))
      .toBeGreaterThanOrEqual(2);
    await cronQueue.removeJobScheduler(cronSchedulerId(job.id));
    const [run] = await context.db.cronRun.findMany({ where: { cronJobId: job.id, status: "Sent" } });
    expect(receiver.deliveriesOf(run?.id as string)).toHaveLength(1);
  });

  it("counts requests in the rate limiter and refuses the one over the limit", async () => {
    const { deps } = createTestApiDeps(context);
    const app = createApp({ ...deps, config: { ...deps.config, RATE_LIMIT_PER_MINUTE: 3 } });
    // The limiter fails open until the connection is ready: the first request must be counted.
    await context.redis.ping();
    const other = await createTestOrganization(context, "Rate limited");
    const statuses: number[] = [];
    for (let index = 0; index < 4; index++) {
      statuses.push((await request(app).get("/api/events").set("x-api-key", other.apiKey)).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it("re-queues through the reconciler an event that has no job, and delivers it", async () => {
    // Committed in Postgres but never queued, as when Redis failed at create.
    const { event } = await createEvent(
      context.db,
      { orgId: org.orgId, destination: receiver.url, scheduledTime: new Date(Date.now() + 2_000), payload: "{}" },
      new Date(),
      context.config.MAX_EVENTS_PER_MONTH,
    );
    await expect
      .poll(() => context.db.event.findUnique({ where: { id: event.id } }).then((row) => row?.status))
      .toBe("Sent");
    expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
  });

  it("lists the worker's heartbeat, the reconciler's run and every queue in service health", async () => {
    const app = createApp(createTestApiDeps(context).deps);
    const health = async () =>
      (await request(app).get("/api/admin/service-health").set("authorization", `Bearer ${ADMIN_TOKEN}`)).body;
    await expect.poll(async () => (await health()).workers?.length).toBe(1);
    const body = await health();
    expect(body.workers[0]).toMatchObject({ pid: process.pid });
    expect(body.reconciler.lastRunAt).toEqual(expect.any(String));
    expect(Object.keys(body.queues)).toEqual(expect.arrayContaining(Object.values(QUEUE_NAMES)));
  });

  it("carries event-change announcements to a subscriber on another connection", async () => {
    const subscriber = context.redis.duplicate();
    const received: string[] = [];
    subscriber.on("message", (_channel: string, message: string) => received.push(message));
    await subscriber.subscribe(eventChangesChannel(context.config.QUEUE_PREFIX));
    try {
      const { deps } = createTestApiDeps(context);
      await expect
        .poll(async () => {
          await deps.eventQueue.announceChange("evt_announced");
          return received.includes("evt_announced");
        })
        .toBe(true);
    } finally {
      subscriber.disconnect();
    }
  });

  it("keeps a console session on the cluster", async () => {
    const app = createApp(createTestApiDeps(context).deps);
    const signIn = await request(app).post("/console/api/session").send({ apiKey: org.apiKey });
    expect(signIn.status).toBe(200);
    const header = signIn.headers["set-cookie"] as unknown as string[];
    const cookie = header.find((line) => line.startsWith("punctual_session="))?.split(";")[0] ?? "";
    expect((await request(app).get("/api/events").set("cookie", cookie)).status).toBe(200);
    // Signed out: the session's key is gone from the cluster.
    expect((await request(app).delete("/console/api/session").set("cookie", cookie)).status).toBeLessThan(300);
    expect((await request(app).get("/api/events").set("cookie", cookie)).status).toBe(401);
  });
});
