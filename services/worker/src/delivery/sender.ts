import type { Config, Logger } from "@punctual/core";
import { createDispatcher, type Dispatcher } from "./dispatcher.ts";
import { createHttpTransport, type HttpTransport } from "./http-transport.ts";

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
  transport: HttpTransport;
  dispatcher: Dispatcher;
}

/** The HTTP transport and the fair dispatcher over it, as the settings ask: one per worker process. */
export function createSender(config: SenderConfig, logger: Logger): Sender {
  const transport = createHttpTransport({
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    allowPrivateDestinations: config.ALLOW_PRIVATE_DESTINATIONS,
    connectionsPerOrigin: config.ORIGIN_CONCURRENCY,
  });
  const dispatcher = createDispatcher({
    transport,
    maxInFlight: config.WORKER_CONCURRENCY,
    originConcurrency: config.ORIGIN_CONCURRENCY,
    unhealthyOriginConcurrency: config.ORIGIN_UNHEALTHY_CONCURRENCY,
    logger,
  });
  return { transport, dispatcher };
}
