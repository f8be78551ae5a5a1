import type { Config } from "@punctual/core";

/**
 * The effective delivery policy (contract §10.1) an event or cron job answer shows when neither it
 * nor its organization set one: the deployment's defaults.
 */
export function defaultEffectivePolicy(config: Pick<Config, "DELIVERY_TIMEOUT_MS" | "RETRY_DELAYS_MS">) {
  return {
    method: "POST",
    headers: {},
    body: "envelope",
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    retry: { delaysMs: [...config.RETRY_DELAYS_MS], maxAgeMs: null, stopOnStatus: [] },
  };
}
