import {
  AppError,
  badRequest,
  createEventBatch,
  type DeliveryPolicy,
  MAX_EVENT_BATCH,
  mergeWithDefault,
  parseInput,
  parsesAsJson,
  rawPayloadProblem,
  readDefaultDeliveryPolicy,
  toEventView,
} from "@punctual/core";
import type { Request, Response } from "express";
import { z } from "zod";
import type { ApiDeps } from "../api-deps.ts";
import { MAX_BATCH_BODY_BYTES, MAX_BODY_BYTES } from "../middleware/json-body.ts";
import { defineRoute, errorResponse } from "../routing/route.ts";
import { quotaNoticesOf } from "../webhooks/quota-notices.ts";
import { tryQueueOperation } from "./queueing.ts";
import { type EventSchema, eventRequestSchemas, monthlyLimitReached, TIME_IN_FUTURE } from "./schemas.ts";

// POST /api/events/batch (contract §10.5): up to MAX_EVENT_BATCH events created all together or
// not at all. Each item is judged as POST /api/events judges its body; the first bad one refuses the
// batch, named by its index from 0. The events are inserted in one statement (their quota units
// taken in it, inside a transaction that a full month rolls back), then their jobs are added in one
// addBulk per queue shard. The batch counts as one request against the API rate limit: the monthly
// quota bounds how many events it makes.

export const BATCH_PATH = "/api/events/batch";
export const TOO_MANY_IN_BATCH = `'events' may hold at most ${MAX_EVENT_BATCH} events`;
export const BATCH_IDEMPOTENCY_REFUSED = "Idempotency-Key is not accepted by POST /api/events/batch";
/** The refusal of one item: its index from 0, then the sentence POST /api/events would answer. */
export const itemRefused = (index: number, message: string) => `Event ${index}: ${message}`;

/** The body limit of the API's requests: the batch reads larger bodies than any other route. */
export const batchBodyLimit = (req: Request) =>
  req.method === "POST" && req.path === "/events/batch" ? MAX_BATCH_BODY_BYTES : MAX_BODY_BYTES;

/** Parses item `index` with the create schema, or refuses the batch naming it. */
function parseItem<S extends z.ZodType>(schema: S, item: unknown, index: number): z.output<S> {
  try {
    return parseInput(schema, item);
  } catch (error) {
    if (error instanceof AppError) throw badRequest(itemRefused(index, error.message));
    throw error;
  }
}

export const createEventsBatchRoute = defineRoute({
  method: "post",
  path: BATCH_PATH,
  operationId: "createEvents",
  summary: "Schedule many events at once",
  description: (config) =>
    `Creates up to ${MAX_EVENT_BATCH} events, each body as for \`POST /api/events\` (contract §10.5), all or none. ` +
    "The first invalid item refuses the whole batch with 400 `Event <index>: <message>`, `<index>` counted from 0 " +
    "and `<message>` the sentence `POST /api/events` would answer for it. When the events' months have too few " +
    `units left for all of them (${config.MAX_EVENTS_PER_MONTH} per month), none is created (403). Otherwise the ` +
    "answer lists the new events in the order given. They are committed in one transaction before the answer, " +
    "even when the queue is unreachable (they are queued later). `Idempotency-Key` is not accepted. " +
    `The body may be up to ${MAX_BATCH_BODY_BYTES / 1024 / 1024} MiB. A batch counts as one request against ` +
    "the rate limit.",
  tag: "Events",
  security: "apiKey",
  body: {
    component: "CreateEventsBatchRequest",
    schema: (limits) =>
      z.strictObject({
        events: z
          .array(eventRequestSchemas(limits).CreateEventSchema)
          .max(MAX_EVENT_BATCH, TOO_MANY_IN_BATCH)
          .meta({ description: `The events' create bodies, at most ${MAX_EVENT_BATCH}` }),
      }),
  },
  failure: "Unable to create the events",
  responses: {
    "200": {
      description: "The new events, in the order given.",
      json: {
        type: "object",
        properties: { events: { type: "array", items: { $ref: "#/components/schemas/Event" } } },
        required: ["events"],
      },
    },
    "400": errorResponse(
      "The body is invalid: the first bad item is named by its index, from 0.",
      itemRefused(3, TIME_IN_FUTURE),
      itemRefused(0, "'payload' is required"),
      "'events' is required",
      TOO_MANY_IN_BATCH,
      BATCH_IDEMPOTENCY_REFUSED,
    ),
    "403": errorResponse(
      "The months of the events have too few units left for all of them; none is created.",
      monthlyLimitReached,
    ),
    "413": errorResponse(`The body is over ${MAX_BATCH_BODY_BYTES / 1024 / 1024} MiB.`, "Request body is too large"),
    "415": errorResponse("The body is not JSON.", "Content-Type must be application/json"),
  },
  handler: (deps: ApiDeps, BatchSchema) => {
    const itemSchema = BatchSchema.shape.events.element;
    // The items are judged one by one, so that a refusal names its index.
    const Shape = z.strictObject({ events: z.array(z.unknown()).max(MAX_EVENT_BATCH, TOO_MANY_IN_BATCH) });
    const quotaNotices = quotaNoticesOf(deps);
    return async (req: Request, res: Response) => {
      if (req.get("idempotency-key") !== undefined) throw badRequest(BATCH_IDEMPOTENCY_REFUSED);
      const { events: items } = parseInput(Shape, req.body);
      const orgId = res.locals.orgId;
      const inputs = items.map((item, index) => {
        const { payload, destination, scheduledTime, flowKey, callbackUrl, labels, ...deliveryPolicy } = parseItem(
          itemSchema,
          item,
          index,
        );
        return { orgId, payload, destination, scheduledTime, flowKey, callbackUrl, labels, deliveryPolicy };
      });
      await refuseUnsendableRawPayloads(deps, orgId, inputs);
      const events = await createEventBatch(deps.db, inputs, deps.clock.now(), deps.config.MAX_EVENTS_PER_MONTH).catch(
        quotaNotices.onRefusal(orgId, res.locals.log),
      );
      // As for one create: committed first; a queue failure is logged and the reconciler queues them.
      if (events.length > 0) {
        await tryQueueOperation(res.locals.log, "queueing the batch", events[0]?.id ?? "", () =>
          deps.eventQueue.scheduleMany(events),
        );
      }
      const body: { events: z.infer<typeof EventSchema>[] } = {
        events: events.map((event) => toEventView(event, deps.config)),
      };
      res.json(body);
    };
  },
});

/**
 * The raw-body rule on each item's policy over the organization's default, read once and only when
 * some payload is not JSON (as a single create does).
 */
async function refuseUnsendableRawPayloads(
  deps: ApiDeps,
  orgId: string,
  inputs: { payload: string; deliveryPolicy: DeliveryPolicy }[],
): Promise<void> {
  if (inputs.every((input) => parsesAsJson(input.payload))) return;
  const organizationDefault = await readDefaultDeliveryPolicy(deps.db, orgId);
  inputs.forEach((input, index) => {
    if (parsesAsJson(input.payload)) return;
    const problem = rawPayloadProblem(input.payload, mergeWithDefault(input.deliveryPolicy, organizationDefault));
    if (problem !== undefined) throw badRequest(itemRefused(index, problem));
  });
}
