import type { Clock, Config, CronScheduler, EventScheduler, Logger, Redis } from "@punctual/core";
import type { Db } from "@punctual/db";
import express, { type Express, Router } from "express";
import { eventRoutes } from "./events/routes.ts";
import { adminAuth } from "./middleware/admin-auth.ts";
import { apiKeyAuth } from "./middleware/api-key-auth.ts";
import { errorHandler, notFoundHandler } from "./middleware/errors.ts";
import { jsonBody } from "./middleware/json-body.ts";
import { requestContext } from "./middleware/request-context.ts";
import { adminRoutes } from "./routes/admin.ts";
import { healthRoutes } from "./routes/health.ts";

/** Everything the HTTP API needs from outside; tests pass their own database, Redis and clock. */
export interface ApiDeps {
  config: Config;
  db: Db;
  redis: Redis;
  clock: Clock;
  logger: Logger;
  /** Puts events on the delayed queue; failures leave them Pending for the reconciler. */
  scheduler: EventScheduler;
  /** Puts cron jobs on BullMQ job schedulers; failures are repaired by the reconciler. */
  cronScheduler: CronScheduler;
}

/** Builds the Express app without listening, so tests can drive it with supertest. */
export function createApp(deps: ApiDeps): Express {
  const app = express();
  app.disable("x-powered-by");
  app.set("trust proxy", "loopback, linklocal, uniquelocal");
  app.set("query parser", "simple");

  app.use(requestContext(deps.logger));
  app.use(healthRoutes(deps.db, deps.redis));

  // Credentials are checked before a body is parsed: unauthenticated bodies are never read.
  const api = Router();
  api.use(
    "/admin",
    adminAuth(deps.config.ADMIN_TOKEN),
    jsonBody(),
    adminRoutes({ db: deps.db, config: deps.config, clock: deps.clock }),
  );
  api.use(apiKeyAuth(deps.db, deps.clock), jsonBody());
  api.use("/events", eventRoutes(deps));
  app.use("/api", api);

  app.use(notFoundHandler());
  app.use(errorHandler());
  return app;
}
