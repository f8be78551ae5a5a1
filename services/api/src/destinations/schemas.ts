import type { DestinationHealth, HeldSummary } from "@punctual/core";
import { z } from "zod";
import { isoOrNull } from "../flows/schemas.ts";

// Destination health in requests and answers (contract §10.3): one record per origin
// (scheme://host:port) the organization's deliveries went to, as the workers keep it in Redis
// (packages/core/src/flows/admission-store.ts).

export const ORIGIN_INVALID =
  "'origin' must be an http or https origin such as https://example.com:8443 (scheme, host and port, no path)";
export const destinationNotFound = (origin: string) => `No destination with origin '${origin}'`;

/**
 * An origin as the workers write it: `new URL(destination).origin` (services/worker's transport.ts,
 * `originOf`), so `https://Example.com:443/` names `https://example.com`. Undefined for anything that
 * is not an http(s) URL of an origin alone (a path, a query, credentials).
 */
export function parseOrigin(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  if (url.username || url.password || url.pathname !== "/" || url.search || url.hash) return undefined;
  // `https://example.com?` and `https://example.com#` parse like the bare origin: refuse them too.
  if (/[?#]/.test(value)) return undefined;
  return url.origin;
}

/** POST /api/destinations/reset body. */
export const ResetDestinationSchema = z
  .strictObject({
    origin: z
      .unknown()
      .transform((value, ctx): string => {
        if (value === undefined) {
          ctx.addIssue({ code: "custom", message: "'origin' is required" });
          return z.NEVER;
        }
        const origin = parseOrigin(value);
        if (origin !== undefined) return origin;
        ctx.addIssue({ code: "custom", message: ORIGIN_INVALID });
        return z.NEVER;
      })
      .meta({
        type: "string",
        format: "uri",
        description:
          "The destination's origin: scheme, host and port (`https://example.com`, `http://10.0.0.5:8080`), as " +
          "`GET /api/destinations` lists it; a default port and a trailing `/` may be written",
      }),
  })
  .meta({ id: "ResetDestinationRequest", description: "POST /api/destinations/reset" });

/** One origin's health, and what waits for it. */
export const DestinationSchema = z
  .object({
    origin: z.string().meta({ description: "Scheme, host and port of the deliveries' destination URLs" }),
    state: z.enum(["Healthy", "Unhealthy"]).meta({
      description:
        "`Unhealthy` after `BREAKER_FAILURES` attempts in a row failed (timeout, refused connection, 5xx) over at " +
        "least `BREAKER_MIN_SPAN_MS`: its due deliveries wait and one probe is sent every `BREAKER_PROBE_MS`",
    }),
    consecutiveFailures: z.number().int().meta({ description: "Attempts that failed in a row, up to now" }),
    since: z.string().meta({ format: "date-time", description: "When it entered its state (or was first attempted)" }),
    waiting: z
      .number()
      .int()
      .meta({
        description:
          "Due deliveries to this origin that the workers hold back now (it is Unhealthy, or their flow holds them " +
          "back), summed over every worker",
      }),
    oldestWaitingSince: z
      .string()
      .nullable()
      .meta({ format: "date-time", description: "When the longest-waiting of them was due; null when none waits" }),
  })
  .meta({ id: "Destination" });
export type Destination = z.infer<typeof DestinationSchema>;

export function toDestination(health: DestinationHealth & HeldSummary): Destination {
  return {
    origin: health.origin,
    state: health.state,
    consecutiveFailures: health.consecutiveFailures,
    since: new Date(health.since).toISOString(),
    waiting: health.waiting,
    oldestWaitingSince: isoOrNull(health.oldestWaitingSince),
  };
}
