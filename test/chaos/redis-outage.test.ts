import {
  CRON_QUEUE_SETTINGS,
  createCronJobSchedulers,
  createEventQueue,
  createFailFastRedis,
  type EventJobData,
  QUEUE_NAMES,
} from "@punctual/core";
import { Queue } from "bullmq";
import request from "supertest";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createApp } from "../../services/api/src/app.ts";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { type OwnRedis, startOwnRedis } from "../support/own-servers.ts";
import { type Receiver, startTestReceiver } from "../support/receiver.ts";
import { startTestWorker } from "../support/worker.ts";
import { countDeliveries } from "./chaos-report.ts";

// Chaos 2: Redis is down while clients create events. The API commits them and answers 200 at once;
// when Redis is back, the reconciler queues them and every one is delivered.

let redis: OwnRedis;
let context: TestContext;
let receiver: Receiver;

beforeAll(async () => {
  redis = await startOwnRedis();
  context = await createTestContext({
    REDIS_URL: redis.url,
    WORKER_HEALTH_PORT: "0",
    RECONCILE_INTERVAL_MS: "1000",
  });
  context.redis.on("error", () => {});
  receiver = await startTestReceiver(context);
  await startTestWorker(context);
});

afterAll(async () => {
  await context?.close();
  await redis?.stop();
});

it("answers 200 while Redis is down, and delivers every event once Redis is back", async () => {
  const org = await createTestOrganization(context);
  // The API as server.ts builds it: enqueueing on a fail-fast connection that is checked first.
  const queueRedis = createFailFastRedis(redis.url);
  queueRedis.on("error", () => {});
  const queue = new Queue<EventJobData>(QUEUE_NAMES.events, {
    connection: queueRedis,
    prefix: context.config.QUEUE_PREFIX,
  });
  queue.on("error", () => {});
  const isConnected = () => queueRedis.status === "ready";
  const { deps } = createTestApiDeps(context);
  const app = createApp({
    ...deps,
    eventQueue: createEventQueue(queue, context.config, deps.clock, isConnected),
    cronJobSchedulers: createCronJobSchedulers(
      new Queue(QUEUE_NAMES.cron, { connection: queueRedis, settings: CRON_QUEUE_SETTINGS }),
      isConnected,
    ),
    // The rate limiter fails open while Redis is down.
  });

  await redis.stop();
  const due = new Date(Date.now() + 8_000);
  const created = [];
  const started = Date.now();
  for (let n = 0; n < 30; n++) {
    const response = await request(app)
      .post("/api/events")
      .set("x-api-key", org.apiKey)
      .send({ payload: `outage ${n}`, destination: receiver.url, scheduledTime: due.toISOString() });
    expect(response.status).toBe(200);
    created.push({ id: response.body.id as string, scheduledTime: due });
  }
  const answeredIn = (Date.now() - started) / created.length;
  expect(await context.db.event.count({ where: { orgId: org.orgId, status: "Pending" } })).toBe(30);

  await redis.start();
  await expect
    .poll(() => context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } }), { timeout: 30_000 })
    .toBe(30);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const counts = countDeliveries("redis down during 30 creates", receiver, created, 30);
  console.info(`[chaos] creates answered in ${answeredIn.toFixed(1)} ms on average while Redis was down`);
  expect(counts.lost).toBe(0);
  expect(counts.duplicated).toBe(0);
  await queue.close().catch(() => {});
  queueRedis.disconnect();
}, 60_000);
