import type { Server } from "node:http";
import {
  apiListenTarget,
  type Config,
  CRON_QUEUE_SETTINGS,
  type CronJobData,
  countPausedFlows,
  createAdmissionStore,
  createCronJobSchedulers,
  createEventQueue,
  createEventQueues,
  createFailFastRedis,
  createLogger,
  createRedis,
  eventQueueLabel,
  type Logger,
  listenError,
  QUEUE_NAMES,
  type Redis,
  readServiceStatus,
  systemClock,
} from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { Queue } from "bullmq";
import { resolveAdminToken } from "./admin-token.ts";
import { createApp } from "./app.ts";
import { createApiMetrics } from "./metrics/api-metrics.ts";
import { answerClientErrors } from "./middleware/client-errors.ts";

export interface RunningApi {
  server: Server;
  port: number;
  /** Stops accepting connections, lets in-flight requests finish, then closes Postgres and Redis. */
  stop(): Promise<void>;
}

/** Starts the HTTP API on `config.PORT` with its own database pool and Redis connection. */
export async function startApi(config: Config, logger: Logger = createLogger(config, "api")): Promise<RunningApi> {
  // Before any connection is opened, so that an unusable token file stops the start cleanly.
  const adminToken = await resolveAdminToken(config, logger);
  const db: Db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  const redis: Redis = createRedis(config);
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  // Enqueueing uses a fail-fast connection: while Redis is down a create still answers (the event
  // is committed and stays Pending for the reconciler) instead of hanging until Redis returns.
  const queueRedis = createFailFastRedis(config);
  queueRedis.on("error", (error) => logger.warn({ err: error }, "redis queue connection error"));
  // One queue per event shard (QUEUE_SHARDS); an event's job goes to its shard's.
  const eventQueues = createEventQueues(queueRedis, config);
  const isConnected = () => queueRedis.status === "ready";
  const eventQueue = createEventQueue(eventQueues, config, systemClock, isConnected, queueRedis);
  const cronQueue = new Queue<CronJobData>(QUEUE_NAMES.cron, {
    connection: queueRedis,
    prefix: config.QUEUE_PREFIX,
    settings: CRON_QUEUE_SETTINGS,
  });
  const cronJobSchedulers = createCronJobSchedulers(cronQueue, isConnected);
  // Only counted (queue depth at /metrics): maintenance jobs are added and run by the workers.
  const maintenanceQueue = new Queue(QUEUE_NAMES.maintenance, { connection: queueRedis, prefix: config.QUEUE_PREFIX });
  // Flows' counts and destinations' health (contract §10.2, §10.3), on the fail-fast connection too:
  // while Redis is down those answers are 503 at once rather than after a reconnect.
  const admissionStore = createAdmissionStore(queueRedis, config.QUEUE_PREFIX);
  const metrics = createApiMetrics({
    queues: [
      // Each shard under a name of its own (`events-0`, …), so their series stay apart.
      ...eventQueues.map((queue, shard) => ({
        name: eventQueueLabel(shard, eventQueues.length),
        getJobCounts: queue.getJobCounts.bind(queue),
      })),
      cronQueue,
      maintenanceQueue,
    ],
    // On the fail-fast connection, like the queue counts: a scrape during an outage answers at once.
    service: {
      postgres: () => db.$queryRaw`SELECT 1`,
      redis: () => queueRedis.ping(),
      status: () => readServiceStatus(queueRedis, config.QUEUE_PREFIX, systemClock.now()),
    },
    flows: {
      unhealthyDestinations: () => admissionStore.unhealthyCount(),
      pausedFlows: () => countPausedFlows(db),
    },
  });
  const app = createApp({
    config: { ...config, ADMIN_TOKEN: adminToken },
    db,
    redis,
    clock: systemClock,
    logger,
    eventQueue,
    cronJobSchedulers,
    metrics,
    admissionStore,
  });
  const server = app.listen(config.PORT, config.HOST);
  answerClientErrors(server);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    // A taken port (or a HOST not on this machine) as one line naming the setting to change.
    server.once("error", (error) => reject(listenError(error, apiListenTarget(config))));
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  logger.info({ port }, "api listening");
  return {
    server,
    port,
    async stop() {
      // Idle keep-alive connections would hold close() open until their keep-alive timeout (5 s):
      // close them now, answer requests still arriving on them with `Connection: close`, and close
      // each connection whose request was in flight as soon as it has been answered.
      server.prependListener("request", (_req, res) => {
        if (!res.headersSent) res.setHeader("Connection", "close");
      });
      const sweep = setInterval(() => server.closeIdleConnections(), 100);
      try {
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
      } finally {
        clearInterval(sweep);
      }
      await Promise.all([...eventQueues.map((queue) => queue.close()), cronQueue.close(), maintenanceQueue.close()]);
      await Promise.allSettled([db.$disconnect(), redis.quit(), queueRedis.quit()]);
    },
  };
}
