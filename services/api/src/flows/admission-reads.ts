import { AppError, withTimeout } from "@punctual/core";

// What flows and destinations answer from Redis (the counts and health the workers keep there,
// packages/core/src/flows/admission-store.ts). In production the store runs on the API's fail-fast
// connection (server.ts): while Redis is down a read fails at once rather than waiting for a
// reconnect. Either way a request never hangs on it: as the console sessions and the service health
// do, it answers 503 with one sentence after at most ADMISSION_READ_TIMEOUT_MS.

/** Longest wait for Redis on a request's path. */
export const ADMISSION_READ_TIMEOUT_MS = 2_000;

export const FLOW_COUNTS_UNAVAILABLE = "Flow counts are unavailable (Redis did not answer), please try again later";
export const DESTINATIONS_UNAVAILABLE =
  "Destination health is unavailable (Redis did not answer), please try again later";

const TIMED_OUT = Symbol("timed out");

/** `read`'s value, or 503 with `message` when Redis fails or does not answer in time. */
export async function fromRedis<T>(read: () => Promise<T>, message: string): Promise<T> {
  const outcome = await withTimeout(Promise.resolve().then(read), ADMISSION_READ_TIMEOUT_MS, TIMED_OUT).catch(
    (): typeof TIMED_OUT => TIMED_OUT,
  );
  if (outcome === TIMED_OUT) throw new AppError("UNAVAILABLE", message);
  return outcome;
}
