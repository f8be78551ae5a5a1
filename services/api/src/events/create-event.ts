import {
  badRequest,
  createEventCreator,
  type DeliveryPolicy,
  FLOW_KEY_INVALID,
  IDEMPOTENCY_KEY_REUSED,
  mergeWithDefault,
  parseInput,
  parsesAsJson,
  REFUSED_DESTINATION_EXAMPLE,
  rawPayloadProblem,
  readDefaultDeliveryPolicy,
  toEventView,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { POLICY_REFUSALS_WITH_PAYLOAD } from "../delivery-policy/schemas.ts";
import { parameterRef } from "../routing/parameters.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { quotaNoticesOf } from "../webhooks/quota-notices.ts";
import { LABEL_REFUSALS } from "./label-schemas.ts";
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
 * The raw-body rule (contract §10.1) on the policy the event will store: its own fields over the
 * organization's default. The schema judged its own fields; only a payload that is not JSON can be
 * refused, so only then is the default read (most payloads are JSON, and a create stays one
 * statement).
 */
async function refuseUnsendableRawPayload(
  deps: ApiDeps,
  orgId: string,
  payload: string,
  own: DeliveryPolicy,
): Promise<void> {
  if (parsesAsJson(payload)) return;
  const merged = mergeWithDefault(own, await readDefaultDeliveryPolicy(deps.db, orgId));
  const problem = rawPayloadProblem(payload, merged);
  if (problem !== undefined) throw badRequest(problem);
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
    "The event is stored before the answer even when the queue is unreachable (it is queued later). " +
    "The optional delivery policy fields (contract §10.1) say how it is sent and retried; each one left out " +
    "is taken from the organization's default policy as it is now (`GET /api/delivery-policy`), else the " +
    "deployment's default. The event keeps that policy when the default changes later; every answer shows " +
    'the effective values, sensitive header values as `"[redacted]"`. The optional `flowKey` (contract §10.2) puts ' +
    "its deliveries in a flow of the organization, whose limits and pause hold them back; the flow needs no record " +
    "(without one it has no limits). The optional `labels` (contract §10.5) are kept on the event (and its replays); " +
    "`GET /api/events` and `POST /api/events/cancel` select by them.",
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
      ...POLICY_REFUSALS_WITH_PAYLOAD,
      FLOW_KEY_INVALID,
      ...LABEL_REFUSALS,
    ),
    "403": errorResponse("The organization's monthly quota of scheduled events is used up.", monthlyLimitReached),
    "422": errorResponse(
      "The `Idempotency-Key` was used within 24 h for a different request (payload, destination, time, delivery policy fields, flow key or labels); nothing is created.",
      IDEMPOTENCY_KEY_REUSED,
    ),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, CreateEventSchema) => {
    const events = createEventCreator(deps.db, deps.config.MAX_EVENTS_PER_MONTH);
    const quotaNotices = quotaNoticesOf(deps);
    return async (req: Request, res: Response) => {
      const { payload, destination, scheduledTime, flowKey, callbackUrl, labels, ...deliveryPolicy } = parseInput(
        CreateEventSchema,
        req.body,
      );
      const key = idempotencyKey(req);
      const orgId = res.locals.orgId;
      await refuseUnsendableRawPayload(deps, orgId, payload, deliveryPolicy);
      const { event, created } = await events
        .create(
          {
            orgId,
            payload,
            destination,
            scheduledTime,
            deliveryPolicy,
            flowKey,
            callbackUrl,
            labels,
            idempotencyKey: key,
          },
          deps.clock.now(),
        )
        .catch(quotaNotices.onRefusal(orgId, res.locals.log));
      // A repeat with the same key returns the first event, whose job was queued by the first request.
      if (created) {
        await tryQueueOperation(res.locals.log, "queueing the event", event.id, () => deps.eventQueue.schedule(event));
      }
      res.json(toEventView(event, deps.config));
    };
  },
});
