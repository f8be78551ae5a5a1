import { Cluster, type ClusterOptions, Redis as SingleRedis } from "ioredis";
import type { Config, RedisClusterSettings } from "./config.ts";

/**
 * A connection to Punctual's Redis: one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES).
 * Both answer the same commands; on a cluster, a command's keys must share one slot, which the
 * queue prefix's hash tag guarantees for every key Punctual uses.
 */
export type Redis = SingleRedis | Cluster;

/** Where a process's Redis is: a URL, or the settings that name one server or a cluster. */
export type RedisTarget = string | Pick<Config, "REDIS_URL" | "REDIS_CLUSTER_NODES">;

/** Options of every node of a cluster connection: its credentials and TLS, beside `options`. */
function clusterOptions(cluster: RedisClusterSettings, options: ClusterOptions): ClusterOptions {
  return {
    ...options,
    redisOptions: {
      ...options.redisOptions,
      ...(cluster.username === undefined ? {} : { username: cluster.username }),
      ...(cluster.password === undefined ? {} : { password: cluster.password }),
      ...(cluster.tls ? { tls: {} } : {}),
    },
  };
}

const clusterOf = (target: RedisTarget) => (typeof target === "string" ? undefined : target.REDIS_CLUSTER_NODES);
const urlOf = (target: RedisTarget) => (typeof target === "string" ? target : target.REDIS_URL);

/**
 * A Redis connection as BullMQ needs it: commands wait for a reconnect instead of failing after a
 * few retries (`maxRetriesPerRequest: null`), so an outage delays work rather than losing it.
 */
export function createRedis(url: string, options?: { lazyConnect?: boolean }): SingleRedis;
export function createRedis(target: RedisTarget, options?: { lazyConnect?: boolean }): Redis;
export function createRedis(target: RedisTarget, options: { lazyConnect?: boolean } = {}): Redis {
  const lazyConnect = options.lazyConnect ?? false;
  const cluster = clusterOf(target);
  if (cluster) {
    return new Cluster(
      cluster.nodes,
      clusterOptions(cluster, {
        enableReadyCheck: true,
        lazyConnect,
        // BullMQ's workers refuse a connection whose commands give up: the nodes' connections wait.
        redisOptions: { maxRetriesPerRequest: null },
        // A cluster that lost a master answers CLUSTERDOWN until its replica took over: retry
        // rather than fail the command (the failover takes a few seconds).
        retryDelayOnClusterDown: 200,
        retryDelayOnTryAgain: 200,
      }),
    );
  }
  return new SingleRedis(urlOf(target), { maxRetriesPerRequest: null, enableReadyCheck: true, lazyConnect });
}

/**
 * A connection for request paths that must answer quickly: a command fails after a short wait
 * instead of hanging while Redis is down (the API still commits events; the reconciler queues them).
 */
export function createFailFastRedis(url: string): SingleRedis;
export function createFailFastRedis(target: RedisTarget): Redis;
export function createFailFastRedis(target: RedisTarget): Redis {
  const retryStrategy = (attempt: number) => Math.min(attempt * 200, 2_000);
  const cluster = clusterOf(target);
  if (cluster) {
    return new Cluster(
      cluster.nodes,
      clusterOptions(cluster, {
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy,
        redisOptions: { maxRetriesPerRequest: 1, connectTimeout: 2_000, commandTimeout: 2_000 },
      }),
    );
  }
  return new SingleRedis(urlOf(target), {
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2_000,
    commandTimeout: 2_000,
    retryStrategy,
  });
}
