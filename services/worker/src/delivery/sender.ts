import type { Config, Logger } from "@punctual/core";
import { createHttpTransport } from "./http-transport.ts";
import { createSendScheduler, type SendScheduler } from "./send-scheduler.ts";
import type { Transport } from "./transport.ts";

/** The settings a sender is built from. */
export type SenderConfig = Pick<
  Config,
  | "DELIVERY_TIMEOUT_MS"
  | "ALLOW_PRIVATE_DESTINATIONS"
  | "WORKER_CONCURRENCY"
  | "ORIGIN_CONCURRENCY"
  | "ORIGIN_UNHEALTHY_CONCURRENCY"
>;

export interface Sender {
  transport: Transport;
  scheduler: SendScheduler;
}

/**
 * The HTTP transport and the fair send scheduler over it, as the settings ask: a worker's own for
 * every attempt of the process, and the warm-up's (with loopback allowed) built the same way.
 */
export function createSender(config: SenderConfig, logger: Logger): Sender {
  const transport = createHttpTransport({
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    allowPrivateDestinations: config.ALLOW_PRIVATE_DESTINATIONS,
    connectionsPerOrigin: config.ORIGIN_CONCURRENCY,
  });
  const scheduler = createSendScheduler({
    transport,
    maxInFlight: config.WORKER_CONCURRENCY,
    originConcurrency: config.ORIGIN_CONCURRENCY,
    unhealthyOriginConcurrency: config.ORIGIN_UNHEALTHY_CONCURRENCY,
    logger,
  });
  return { transport, scheduler };
}
