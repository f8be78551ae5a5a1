import { randomBytes } from "node:crypto";
import {
  announceWorker,
  type Clock,
  type Config,
  CRON_QUEUE_SETTINGS,
  CRON_RUN_JOB,
  type CronJobData,
  createCronJobSchedulers,
  createEventQueue,
  createLogger,
  createOrganization,
  createRedis,
  cronSchedulerId,
  type EventJobData,
  type Logger,
  loadConfig,
  QUEUE_NAMES,
  type Redis,
  readServiceStatus,
  systemClock,
} from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { createTestDatabase, type TestDatabase } from "@punctual/db/testing";
import { Queue } from "bullmq";

// Everything a test file needs, isolated from every other file: its own database (a copy of the
// migrated template) and its own BullMQ prefix on the shared Redis.

export const testRedisUrl = () => process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379";

export interface TestContext {
  config: Config;
  db: Db;
  redis: Redis;
  database: TestDatabase;
  logger: Logger;
  /**
   * Closes what `onClose` was given, removes every Redis key of this file's prefix, closes
   * connections, drops the database.
   */
  close(): Promise<void>;
  /** Queues made for this file (createTestApiDeps); closed before the Redis connection is. */
  queues: Queue[];
  /**
   * Has `close` run first when the context closes, the last one given first: a worker started after
   * the receiver it delivers to stops before that receiver closes.
   */
  onClose(close: () => Promise<void>): void;
}

export interface TestOrganization {
  orgId: string;
  accountId: string;
  apiKey: string;
  signingSecret: string;
}

/** Builds a Config for tests: private destinations allowed (receivers are on loopback). */
export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: `test-${randomBytes(6).toString("hex")}`,
    ALLOW_PRIVATE_DESTINATIONS: "true",
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? "silent",
    // Workers made in a test's process start without the warm-up (its own test turns it on).
    WORKER_WARMUP_REQUESTS: "0",
    ...overrides,
  });
}

export async function createTestContext(overrides: Record<string, string> = {}): Promise<TestContext> {
  const database = await createTestDatabase();
  const config = testConfig({ DATABASE_URL: database.url, ...overrides });
  const db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  const redis = createRedis(config);
  const logger = createLogger(config, "test");
  const queues: Queue[] = [];
  const closers: (() => Promise<void>)[] = [];
  return {
    config,
    db,
    redis,
    database,
    logger,
    queues,
    onClose(close) {
      closers.push(close);
    },
    async close() {
      for (const close of closers.splice(0).reverse()) await close();
      // A queue still starting up on the connection would fail loudly once it is closed.
      await Promise.allSettled(queues.map((queue) => queue.close()));
      // A test's own Redis Cluster is thrown away whole (test/support/redis-cluster.ts).
      if (!config.REDIS_CLUSTER_NODES) await deleteKeys(redis, `${config.QUEUE_PREFIX}:*`);
      await redis.quit();
      await db.$disconnect();
      await database.drop();
    },
  };
}

export async function deleteKeys(redis: Redis, pattern: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", pattern, "COUNT", 1000);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== "0");
}

/** A new organization with an API key, through the same operation the admin CLI uses. */
export async function createTestOrganization(
  context: Pick<TestContext, "db" | "config">,
  name = "Test Org",
): Promise<TestOrganization> {
  const email = `owner-${randomBytes(6).toString("hex")}@example.com`;
  return createOrganization({ db: context.db, config: context.config }, { email, name });
}

/**
 * The heartbeat of another worker process, alive (for 15 s), as that worker announces it: the owner
 * of deliveries a test claims in its name.
 */
export async function announceLiveWorker(context: Pick<TestContext, "redis" | "config">, id: string): Promise<void> {
  const at = new Date().toISOString();
  await announceWorker(context.redis, context.config.QUEUE_PREFIX, {
    id,
    host: "elsewhere",
    pid: 1,
    startedAt: at,
    lastSeenAt: at,
  });
}

/** The API's dependencies for a test context: a real delayed queue under the file's own prefix. */
export function createTestApiDeps(context: TestContext, clock: Clock = systemClock) {
  const queue = new Queue<EventJobData>(QUEUE_NAMES.events, {
    connection: context.redis,
    prefix: context.config.QUEUE_PREFIX,
  });
  const eventQueue = createEventQueue(queue, context.config, clock, () => true, context.redis);
  const cronQueue = new Queue<CronJobData>(QUEUE_NAMES.cron, {
    connection: context.redis,
    prefix: context.config.QUEUE_PREFIX,
    settings: CRON_QUEUE_SETTINGS,
  });
  const cronJobSchedulers = createCronJobSchedulers(cronQueue);
  context.queues.push(queue, cronQueue);
  return {
    deps: {
      config: context.config,
      db: context.db,
      redis: context.redis,
      clock,
      logger: context.logger,
      eventQueue,
      cronJobSchedulers,
    },
    queue,
    cronQueue,
  };
}

/**
 * Settings and a wait for tests that drive a cron job's scheduler every second (six fields) instead
 * of its real expression: the reconciler puts a job's real scheduler back when it finds none, so a
 * run of it overlapping the test's own upsert could replace the per-second one. With these settings
 * it runs once, at the worker's start, and `reconcilerSettled` waits for that run to be over.
 */
export const PER_SECOND_CRON_SETTINGS = { RECONCILE_INTERVAL_MS: "600000", ENQUEUE_HORIZON_MS: "3000000" };

const EVERY_SECOND = "* * * * * *";

/** Drives a cron job's scheduler every second (six fields) instead of its expression; returns its queue. */
export async function fireEverySecond(context: TestContext, cronJobId: string): Promise<Queue> {
  const { cronQueue } = createTestApiDeps(context);
  await cronQueue.upsertJobScheduler(
    cronSchedulerId(cronJobId),
    { pattern: EVERY_SECOND },
    { name: CRON_RUN_JOB, data: { cronJobId } },
  );
  return cronQueue;
}

export async function reconcilerSettled(context: TestContext): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const status = await readServiceStatus(context.redis, context.config.QUEUE_PREFIX, new Date());
    if (status.reconciler.lastRunAt !== null) return;
    if (Date.now() > deadline) throw new Error("the reconciler's first run did not finish within 30 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * `fireEverySecond` beside a worker whose reconciler runs often (a short RECONCILE_INTERVAL_MS that
 * the test file needs for other cases): waits until a reconciler run that began after the upsert has
 * ended (runs are one at a time, so every earlier one has too), and puts the per-second scheduler
 * back if one of them replaced it with the job's own. No later run can: it finds a scheduler there.
 */
export async function fireEverySecondBesideReconciler(context: TestContext, cronJobId: string): Promise<Queue> {
  const queue = await fireEverySecond(context, cronJobId);
  const upsertedAt = Date.now();
  const deadline = upsertedAt + 30_000;
  for (;;) {
    const { lastRunAt } = (await readServiceStatus(context.redis, context.config.QUEUE_PREFIX, new Date())).reconciler;
    if (lastRunAt !== null && Date.parse(lastRunAt) > upsertedAt) break;
    if (Date.now() > deadline) throw new Error("no reconciler run began and ended within 30 s of the upsert");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const scheduler = await queue.getJobScheduler(cronSchedulerId(cronJobId));
  if (scheduler?.pattern !== EVERY_SECOND) await fireEverySecond(context, cronJobId);
  return queue;
}
