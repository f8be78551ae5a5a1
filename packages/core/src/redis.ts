import { Redis } from "ioredis";

export type { Redis };

/**
 * A Redis connection as BullMQ needs it: commands wait for a reconnect instead of failing after a
 * few retries (`maxRetriesPerRequest: null`), so an outage delays work rather than losing it.
 */
export function createRedis(url: string, options: { lazyConnect?: boolean } = {}): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: null,
    enableReadyCheck: true,
    lazyConnect: options.lazyConnect ?? false,
  });
}

/**
 * A connection for request paths that must answer quickly: a command fails after a short wait
 * instead of hanging while Redis is down (the API still commits events; the reconciler queues them).
 */
export function createFailFastRedis(url: string): Redis {
  return new Redis(url, {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
}
