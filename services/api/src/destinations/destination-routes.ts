import { notFound, parseInput } from "@punctual/core";
import type { Request, Response } from "express";
import type { ResolvedApiDeps } from "../api-deps.ts";
import { DESTINATIONS_UNAVAILABLE, fromRedis } from "../flows/admission-reads.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import {
  type Destination,
  destinationNotFound,
  ORIGIN_INVALID,
  ResetDestinationSchema,
  toDestination,
} from "./schemas.ts";

// Contract §10.3: the health of each origin an organization's deliveries go to. The workers keep it
// in Redis (the breaker of packages/core/src/flows/admission-store.ts); the API reads it and resets it.

/** Where the destinations API is mounted, behind the API key check. */
export const DESTINATIONS_PATH = "/api/destinations";

const byOrigin = (a: Destination, b: Destination) => (a.origin < b.origin ? -1 : a.origin > b.origin ? 1 : 0);

/** GET /api/destinations: the organization's origins with their health, by origin. */
export const listDestinationsRoute = defineRoute({
  method: "get",
  path: DESTINATIONS_PATH,
  operationId: "listDestinations",
  summary: "List destinations with their health",
  description:
    "Every origin (scheme, host and port) the organization's deliveries were attempted to within the last 30 days, " +
    "by origin, with its health: `Healthy`, or `Unhealthy` after `BREAKER_FAILURES` (default 20) attempts in a row " +
    "failed by timeout, refused connection or 5xx over at least `BREAKER_MIN_SPAN_MS` (default 60 s). An Unhealthy " +
    "origin's due deliveries wait (they are not attempts and do not fail; a `retry.maxAgeMs` still ends them) and " +
    "one of them is sent as a probe every `BREAKER_PROBE_MS` (default 30 s); its first success makes it Healthy.",
  tag: "Destinations",
  security: "apiKey",
  failure: "Unable to list the destinations",
  responses: {
    "200": {
      description: "The destinations.",
      json: { type: "array", items: { $ref: "#/components/schemas/Destination" } },
    },
    "503": errorResponse("Redis, where the health is kept, did not answer.", DESTINATIONS_UNAVAILABLE),
  },
  handler: (deps: ResolvedApiDeps) => async (_req: Request, res: Response) => {
    const orgId = res.locals.orgId;
    const found = await fromRedis(() => deps.admissionStore.destinations(orgId), DESTINATIONS_UNAVAILABLE);
    res.json(found.map(toDestination).sort(byOrigin));
  },
});

/** POST /api/destinations/reset: makes one origin Healthy at once. */
export const resetDestinationRoute = defineRoute({
  method: "post",
  path: `${DESTINATIONS_PATH}/reset`,
  operationId: "resetDestination",
  summary: "Make a destination Healthy",
  description:
    "Makes the origin `Healthy` at once, its failures in a row back to 0, as after a successful probe: its " +
    "waiting deliveries go, oldest first, under the usual limits (within a few seconds). Use it once the " +
    "receiver is fixed, rather than waiting for the next probe. Failures after it count from 0.",
  tag: "Destinations",
  security: "apiKey",
  body: { component: "ResetDestinationRequest", schema: () => ResetDestinationSchema },
  failure: "Unable to reset the destination",
  responses: {
    "200": { description: "The destination, `Healthy`.", json: "Destination" },
    "400": errorResponse(
      "The body is invalid; one sentence names the first problem.",
      "'origin' is required",
      ORIGIN_INVALID,
      "Unknown field 'url'",
    ),
    "404": errorResponse(
      "No delivery of the organization went to this origin within the last 30 days.",
      destinationNotFound("https://example.com"),
    ),
    "503": errorResponse("Redis, where the health is kept, did not answer.", DESTINATIONS_UNAVAILABLE),
    ...BODY_RESPONSES,
  },
  handler: (deps: ResolvedApiDeps, Schema) => async (req: Request, res: Response) => {
    const { origin } = parseInput(Schema, req.body ?? {});
    const orgId = res.locals.orgId;
    const store = deps.admissionStore;
    const found = await fromRedis(async () => {
      if (!(await store.reset(orgId, origin))) return undefined;
      return (await store.destinations(orgId)).find((destination) => destination.origin === origin);
    }, DESTINATIONS_UNAVAILABLE);
    if (!found) throw notFound(destinationNotFound(origin));
    res.json(toDestination(found));
  },
});

/** Contract §10.3: the destinations API, in the order the document lists them. */
export const destinationRoutes = [listDestinationsRoute, resetDestinationRoute];
