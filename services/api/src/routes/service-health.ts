import {
  AppError,
  type Clock,
  type Config,
  CRON_QUEUE_SETTINGS,
  createEventQueues,
  eventQueuePrefixes,
  QUEUE_NAMES,
  type QueueName,
  type Redis,
  readServiceStatus,
  withTimeout,
} from "@punctual/core";
import { Queue } from "bullmq";
import type { Request, Response } from "express";
import { z } from "zod";
import { QUEUE_DASHBOARD_PATH } from "../admin-ui/queue-dashboard.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";

// Contract §5: the operator's view of the service: the queues' depth, the workers that are alive
// (each renews a heartbeat in Redis every 5 s), when the reconciler last ran and how the failure
// notices go. Everything comes from Redis; Postgres is not asked.

/** The job states shown per queue. */
const STATES = ["waiting", "delayed", "active", "failed"] as const;
/** Longest wait for Redis; without an answer the endpoint says so (503) rather than hang. */
const REDIS_TIMEOUT_MS = 2_000;
export const REDIS_UNAVAILABLE = "Redis did not answer";

export interface ServiceHealthDeps {
  config: Pick<Config, "QUEUE_PREFIX" | "QUEUE_SHARDS" | "SMTP_URL">;
  redis: Redis;
  clock: Clock;
}

const counts = z.strictObject(Object.fromEntries(STATES.map((state) => [state, z.number().int()])));
const timestamp = () => z.string().meta({ format: "date-time" });

export const ServiceHealthSchema = z
  .strictObject({
    queues: z
      .strictObject({ events: counts, cron: counts, maintenance: counts })
      .meta({ description: "Jobs by state per queue; `events` counts every event shard's queue" }),
    eventShards: z
      .array(z.strictObject({ shard: z.number().int(), prefix: z.string(), ...counts.shape }))
      .optional()
      .meta({
        description: "With QUEUE_SHARDS above 1: each event shard's queue, its key prefix and its jobs by state",
      }),
    workers: z
      .array(
        z.strictObject({
          id: z.string(),
          host: z.string(),
          pid: z.number().int(),
          startedAt: timestamp(),
          lastSeenAt: timestamp(),
        }),
      )
      .meta({ description: "Workers whose heartbeat (renewed every 5 s) is under 15 s old, oldest first" }),
    reconciler: z.strictObject({
      lastRunAt: timestamp().nullable(),
      durationMs: z.number().int().nullable(),
    }),
    failureNotices: z.strictObject({
      lastSentAt: timestamp().nullable(),
      sentLast24h: z.number().int(),
      smtpConfigured: z.boolean().meta({
        description:
          "Whether `SMTP_URL` is set in this deployment's configuration (as the API reads it): without it no notice is ever sent",
      }),
    }),
    bullBoard: z.string().meta({ description: "Where Bull Board is" }),
  })
  .meta({
    examples: [
      {
        queues: {
          events: { waiting: 0, delayed: 1520, active: 3, failed: 0 },
          cron: { waiting: 0, delayed: 3, active: 0, failed: 0 },
          maintenance: { waiting: 0, delayed: 2, active: 0, failed: 0 },
        },
        workers: [
          {
            id: "9f2c4e1a7b3d5f60",
            host: "worker-1",
            pid: 41,
            startedAt: "2026-01-15T08:00:00.000Z",
            lastSeenAt: "2026-01-15T09:29:58.000Z",
          },
        ],
        reconciler: { lastRunAt: "2026-01-15T09:29:56.000Z", durationMs: 12 },
        failureNotices: { lastSentAt: "2026-01-15T09:00:01.000Z", sentLast24h: 2, smtpConfigured: true },
        bullBoard: "/admin/queues",
      },
    ],
  });

export const serviceHealthRoute = defineRoute({
  method: "get",
  path: "/api/admin/service-health",
  operationId: "adminGetServiceHealth",
  summary: "Service health: queues, live workers, reconciler, failure notices",
  tag: "Admin",
  security: "admin",
  failure: "Unable to read the service health",
  responses: {
    "200": { description: "The service's state, read from Redis.", json: "ServiceHealth" },
    "503": errorResponse("Redis does not answer.", REDIS_UNAVAILABLE),
  },
  handler: (deps: ServiceHealthDeps) => {
    // Opened on the first request: an API whose operator never looks opens no queues.
    let queues: (Record<Exclude<QueueName, "events">, Queue> & { events: Queue[] }) | undefined;
    const queuesOf = () => {
      queues ??= {
        events: createEventQueues(deps.redis, deps.config),
        cron: new Queue(QUEUE_NAMES.cron, {
          connection: deps.redis,
          prefix: deps.config.QUEUE_PREFIX,
          settings: CRON_QUEUE_SETTINGS,
        }),
        maintenance: new Queue(QUEUE_NAMES.maintenance, { connection: deps.redis, prefix: deps.config.QUEUE_PREFIX }),
      };
      return queues;
    };
    const countsOf = async (queue: Queue) => {
      const found = await queue.getJobCounts(...STATES);
      return Object.fromEntries(STATES.map((state) => [state, found[state] ?? 0]));
    };
    const read = async () => {
      const { events, cron, maintenance } = queuesOf();
      const [shardCounts, cronCounts, maintenanceCounts, status] = await Promise.all([
        Promise.all(events.map(countsOf)),
        countsOf(cron),
        countsOf(maintenance),
        readServiceStatus(deps.redis, deps.config.QUEUE_PREFIX, deps.clock.now()),
      ]);
      const eventCounts = Object.fromEntries(
        STATES.map((state) => [state, shardCounts.reduce((sum, shard) => sum + (shard[state] ?? 0), 0)]),
      );
      const prefixes = eventQueuePrefixes(deps.config);
      const eventShards =
        shardCounts.length > 1
          ? shardCounts.map((shard, index) => ({ shard: index, prefix: prefixes[index], ...shard }))
          : undefined;
      return {
        queues: { events: eventCounts, cron: cronCounts, maintenance: maintenanceCounts },
        ...(eventShards ? { eventShards } : {}),
        ...status,
        failureNotices: { ...status.failureNotices, smtpConfigured: deps.config.SMTP_URL !== undefined },
        bullBoard: QUEUE_DASHBOARD_PATH,
      };
    };
    return async (_req: Request, res: Response) => {
      const health = await withTimeout(read(), REDIS_TIMEOUT_MS, undefined);
      if (health === undefined) throw new AppError("UNAVAILABLE", REDIS_UNAVAILABLE);
      res.json(health);
    };
  },
});
