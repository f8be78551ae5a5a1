import {
  createEventQueue,
  createRedis,
  type EventJobData,
  loadConfig,
  newId,
  QUEUE_NAMES,
  systemClock,
} from "@punctual/core";
import { createDb } from "@punctual/db";
import { createTestDatabase } from "@punctual/db/testing";
import { Queue } from "bullmq";
import pg from "pg";
import { createHorizonFeeder, FEEDER_CLOCK_SLACK_MS } from "../../services/worker/src/maintenance/horizon-feeder.ts";
import { startOwnRedis } from "../../test/support/own-servers.ts";
import { insertEvents, insertOrganization } from "./setup.ts";

// Unit costs of stored and queued events, and what the enqueue horizon saves: `events` Pending events
// spread evenly over the next `days` days go into a fresh database, then into a Redis server of this
// measurement's own (so that `used_memory` counts nothing else) twice: every event queued at once
// through the real event queue with the horizon off (ENQUEUE_HORIZON_MS very large), as before the
// horizon; then, on an emptied server, through the real feeder with the default horizon.

export interface HorizonResult {
  events: number;
  days: number;
  horizonMs: number;
  /** Horizon off: every event's delayed job. */
  off: { jobs: number; usedMemoryBytes: number; bytesPerJob: number; enqueueMs: number };
  /** Default horizon: the jobs the feeder added, and the events due within it when it ran. */
  on: { jobs: number; dueWithinHorizon: number; usedMemoryBytes: number; feedMs: number; runs: number };
  /** An empty server's used_memory, included in neither delta. */
  baseUsedMemoryBytes: number;
  postgres: {
    /** pg_total_relation_size (heap, TOAST and every index) of events, per Pending event inserted. */
    bytesPerEvent: number;
    /** The same of event_attempts, per attempt row (one per event). */
    bytesPerAttempt: number;
    payloadBytes: number;
  };
}

const PAYLOAD = '{"hello":"world"}';
const DESTINATION = "https://example.com/hook";

async function usedMemory(redis: ReturnType<typeof createRedis>): Promise<number> {
  const info = await redis.info("memory");
  return Number(/used_memory:(\d+)/.exec(info)?.[1]);
}

async function relationSize(db: pg.Client, table: string): Promise<number> {
  const { rows } = await db.query<{ size: string }>("SELECT pg_total_relation_size($1::regclass) AS size", [table]);
  return Number(rows[0]?.size);
}

export async function measureHorizon(
  spec: { events: number; days: number },
  log: (message: string) => void,
): Promise<HorizonResult> {
  const redisServer = await startOwnRedis();
  const database = await createTestDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  const prisma = createDb(database.url, { poolSize: 2 });
  const redis = createRedis(redisServer.url);
  const config = loadConfig({ REDIS_URL: redisServer.url, QUEUE_PREFIX: "bench-horizon" });
  const queue = new Queue<EventJobData>(QUEUE_NAMES.events, { connection: redis, prefix: config.QUEUE_PREFIX });
  try {
    const count = (n: number) => n.toLocaleString("en-US");
    log(`horizon: ${count(spec.events)} Pending events over the next ${spec.days} days into Postgres`);
    const org = await insertOrganization(client, "bench-horizon");
    const start = Date.now() + 60_000;
    const stepMs = (spec.days * 86_400_000) / spec.events;
    const events = Array.from({ length: spec.events }, (_, n) => ({
      id: newId("evt"),
      scheduledTime: new Date(start + Math.floor(n * stepMs)),
    }));
    await client.query("VACUUM ANALYZE events");
    const eventsBefore = await relationSize(client, "events");
    for (let i = 0; i < events.length; i += 10_000) {
      await insertEvents(client, org.orgId, DESTINATION, events.slice(i, i + 10_000));
    }
    await client.query("VACUUM ANALYZE events");
    const bytesPerEvent = ((await relationSize(client, "events")) - eventsBefore) / spec.events;

    // One attempt per event, as the worker records a first-attempt success (the stored event rows
    // are not changed: this is the attempts table's own cost).
    log(`horizon: ${count(spec.events)} attempt rows`);
    const attemptsBefore = await relationSize(client, "event_attempts");
    await client.query(
      `INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
       SELECT id, 1, scheduled_time + interval '3 milliseconds', 200, 40, NULL FROM events WHERE org_id = $1`,
      [org.orgId],
    );
    await client.query("VACUUM ANALYZE event_attempts");
    const bytesPerAttempt = ((await relationSize(client, "event_attempts")) - attemptsBefore) / spec.events;
    // The attempts go again: the feeder below reads the events as they are, Pending.
    await client.query("TRUNCATE event_attempts");

    const baseUsedMemoryBytes = await usedMemory(redis);
    log(`horizon: off, ${count(spec.events)} delayed jobs through the event queue`);
    const everything = createEventQueue(queue, { ...config, ENQUEUE_HORIZON_MS: 1e15 }, systemClock);
    const enqueueStarted = performance.now();
    for (let i = 0; i < events.length; i += 1_000) await everything.scheduleMany(events.slice(i, i + 1_000));
    const enqueueMs = performance.now() - enqueueStarted;
    // The first events' jobs are already due (waiting) by the time the last ones are added.
    const offJobs = await queue.getJobCountByTypes("delayed", "waiting");
    const offBytes = (await usedMemory(redis)) - baseUsedMemoryBytes;

    await redis.flushall();
    const emptyAgain = await usedMemory(redis);
    log(`horizon: on (ENQUEUE_HORIZON_MS=${config.ENQUEUE_HORIZON_MS}), the feeder's passes`);
    const feed = createHorizonFeeder({
      db: prisma,
      clock: systemClock,
      config,
      eventQueue: createEventQueue(queue, config, systemClock),
      redis,
    });
    const now = new Date();
    const feedStarted = performance.now();
    // The first passes walk the whole horizon (no cursor yet), as after a start or a flush.
    let runs = 0;
    while ((await feed(now)) > 0) runs++;
    const feedMs = performance.now() - feedStarted;
    // Up to where the feeder goes; the events already past their time (no worker runs here) included.
    const { rows } = await client.query<{ n: string }>(
      "SELECT count(*) AS n FROM events WHERE status = 'Pending' AND scheduled_time <= $1",
      [new Date(now.getTime() + config.ENQUEUE_HORIZON_MS - FEEDER_CLOCK_SLACK_MS)],
    );
    const onJobs = await queue.getJobCountByTypes("delayed", "waiting");
    const onBytes = (await usedMemory(redis)) - emptyAgain;
    return {
      events: spec.events,
      days: spec.days,
      horizonMs: config.ENQUEUE_HORIZON_MS,
      off: { jobs: offJobs, usedMemoryBytes: offBytes, bytesPerJob: offBytes / offJobs, enqueueMs },
      on: { jobs: onJobs, dueWithinHorizon: Number(rows[0]?.n), usedMemoryBytes: onBytes, feedMs, runs: runs + 1 },
      baseUsedMemoryBytes,
      postgres: { bytesPerEvent, bytesPerAttempt, payloadBytes: Buffer.byteLength(PAYLOAD) },
    };
  } finally {
    await queue.close();
    await redis.quit();
    await prisma.$disconnect();
    await client.end();
    await database.drop();
    await redisServer.stop();
  }
}
