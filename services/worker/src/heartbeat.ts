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
  withTimeout,
} from "@punctual/core";

/** Longest wait for Redis at a stop: an outage must not hold the worker's shutdown. */
const STOP_TIMEOUT_MS = 2_000;

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
 * the operator's service-health endpoint lists. Its id is the owner its claims record: while it is
 * there, no other worker takes over a delivery this one claimed (delivery/owners.ts). A failed write
 * is logged and the next beat tries again; the key outlasts two missed beats.
 */
export function createHeartbeat(deps: HeartbeatDeps): Heartbeat {
  const id = randomBytes(8).toString("hex");
  const host = hostname();
  let startedAt: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  let beating: Promise<void> | undefined;

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
        // While Redis does not answer, beats would pile up on the connection: one at a time.
        if (beating) return;
        beating = beat().finally(() => {
          beating = undefined;
        });
      }, HEARTBEAT_INTERVAL_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      timer = undefined;
      // After the beat in flight, which would otherwise put the heartbeat back once removed.
      const withdraw = (async () => {
        await beating;
        await withdrawWorker(deps.redis, deps.prefix, id);
        return true;
      })();
      const removed = await withTimeout(withdraw, STOP_TIMEOUT_MS, false).catch((error: unknown) => {
        deps.logger.warn({ err: error }, "could not remove the worker heartbeat");
        return true;
      });
      if (!removed) deps.logger.warn("Redis did not answer; the worker heartbeat expires on its own");
    },
  };
}
