import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import {
  announceWorker,
  type Clock,
  HEARTBEAT_INTERVAL_MS,
  type Logger,
  type Redis,
  type WorkerHeartbeat,
  withdrawWorker,
} from "@punctual/core";

export interface HeartbeatDeps {
  redis: Redis;
  prefix: string;
  clock: Clock;
  logger: Logger;
}

export interface Heartbeat {
  /** This worker's id in the heartbeat. */
  readonly id: string;
  /** Announces the worker now, then every HEARTBEAT_INTERVAL_MS. */
  start(): Promise<void>;
  /** Stops announcing and removes the heartbeat, so the worker leaves the list at once. */
  stop(): Promise<void>;
}

/**
 * The worker's heartbeat in Redis (`<prefix>:worker:<id>`, expiring after HEARTBEAT_TTL_MS), which
 * the operator's service-health endpoint lists. It only informs: a missed beat changes no delivery,
 * so a failed write is logged and the next beat tries again.
 */
export function createHeartbeat(deps: HeartbeatDeps): Heartbeat {
  const id = randomBytes(8).toString("hex");
  const host = hostname();
  let startedAt: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> = Promise.resolve();

  const beat = async () => {
    const now = deps.clock.now().toISOString();
    startedAt ??= now;
    const heartbeat: WorkerHeartbeat = { id, host, pid: process.pid, startedAt, lastSeenAt: now };
    await announceWorker(deps.redis, deps.prefix, heartbeat).catch((error: unknown) =>
      deps.logger.warn({ err: error }, "could not renew the worker heartbeat"),
    );
  };

  return {
    id,
    async start() {
      await beat();
      timer = setInterval(() => {
        beating = beat();
      }, HEARTBEAT_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      // A beat in flight would otherwise put the heartbeat back after it was removed.
      await beating;
      await withdrawWorker(deps.redis, deps.prefix, id).catch((error: unknown) =>
        deps.logger.warn({ err: error }, "could not remove the worker heartbeat"),
      );
    },
  };
}
