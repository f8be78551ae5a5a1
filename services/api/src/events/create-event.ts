import {
  badRequest,
  createEventCreator,
  IDEMPOTENCY_KEY_REUSED,
  parseInput,
  REFUSED_DESTINATION_EXAMPLE,
  toEventView,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { parameterRef } from "../routing/parameters.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { tryQueueOperation } from "./queueing.ts";
import {
  DESTINATION_URL,
  eventRequestSchemas,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  monthlyLimitReached,
  payloadTooLong,
  TIME_IN_FUTURE,
  TIME_ZONE_REQUIRED,
  VALID_TIME,
} from "./schemas.ts";

/** The optional `Idempotency-Key` header (contract §3), or undefined when absent. */
function idempotencyKey(req: Request): string | undefined {
  const key = req.get("idempotency-key");
  if (key === undefined) return undefined;
  if (key.length === 0) throw badRequest("Idempotency-Key must not be empty");
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
    throw badRequest(`Idempotency-Key must be at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  }
  return key;
}

/**
 * POST /api/events: commits a Pending event (taking a unit of its month's quota), then puts its
 * delayed job on the queue. A queue failure does not fail the request: the event is committed and
 * the reconciler queues it.
 */
export const createEventRoute = defineRoute({
  method: "post",
  path: "/api/events",
  operationId: "createEvent",
  summary: "Schedule an event",
  description:
    "Commits a `Pending` event; at `scheduledTime` its payload is POSTed to `destination`, signed. " +
    "The event is stored before the answer even when the queue is unreachable (it is queued later).",
  tag: "Events",
  security: "apiKey",
  parameters: [parameterRef("IdempotencyKey")],
  body: { component: "CreateEventRequest", schema: (limits) => eventRequestSchemas(limits).CreateEventSchema },
  failure: "Unable to create the event",
  responses: {
    "200": { description: "The new event (or, for a repeated `Idempotency-Key`, the first one).", json: "Event" },
    "400": errorResponse(
      "The body or a header is invalid; one sentence names the first problem.",
      VALID_TIME,
      TIME_ZONE_REQUIRED,
      TIME_IN_FUTURE,
      payloadTooLong,
      DESTINATION_URL,
      REFUSED_DESTINATION_EXAMPLE,
      "'payload' is required",
      "Unknown field 'payloadd'",
      "Request body is not valid JSON",
    ),
    "403": errorResponse("The organization's monthly quota of scheduled events is used up.", monthlyLimitReached),
    "422": errorResponse(
      "The `Idempotency-Key` was used within 24 h for a different request (payload, destination or time); nothing is created.",
      IDEMPOTENCY_KEY_REUSED,
    ),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, CreateEventSchema) => {
    const events = createEventCreator(deps.db, deps.config.MAX_EVENTS_PER_MONTH);
    return async (req: Request, res: Response) => {
      const input = parseInput(CreateEventSchema, req.body);
      const key = idempotencyKey(req);
      const { event, created } = await events.create(
        { orgId: res.locals.orgId, ...input, idempotencyKey: key },
        deps.clock.now(),
      );
      // A repeat with the same key returns the first event, whose job was queued by the first request.
      if (created) {
        await tryQueueOperation(res.locals.log, "queueing the event", event.id, () => deps.eventQueue.schedule(event));
      }
      res.json(toEventView(event));
    };
  },
});
