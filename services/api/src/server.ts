import type { Server } from "node:http";
import { type Config, createLogger, createRedis, type Logger, type Redis, systemClock } from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { createApp } from "./app.ts";

export interface RunningApi {
  server: Server;
  port: number;
  /** Stops accepting connections, lets in-flight requests finish, then closes Postgres and Redis. */
  stop(): Promise<void>;
}

/** Starts the HTTP API on `config.PORT` with its own database pool and Redis connection. */
export async function startApi(config: Config, logger: Logger = createLogger(config, "api")): Promise<RunningApi> {
  const db: Db = createDb(config.DATABASE_URL, { poolSize: config.DATABASE_POOL_SIZE });
  const redis: Redis = createRedis(config.REDIS_URL);
  redis.on("error", (error) => logger.warn({ err: error }, "redis connection error"));
  const app = createApp({ config, db, redis, clock: systemClock, logger });
  const server = app.listen(config.PORT, config.HOST);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : config.PORT;
  logger.info({ port }, "api listening");
  return {
    server,
    port,
    async stop() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Idle keep-alive connections would hold close() open; in-flight requests still finish.
        server.closeIdleConnections();
      });
      await Promise.allSettled([db.$disconnect(), redis.quit()]);
    },
  };
}
