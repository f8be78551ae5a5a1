import { badRequest, createEventCreator, parseInput, toEventView } from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../app.ts";
import { failsWith } from "../middleware/errors.ts";
import { tryQueueOperation } from "./queueing.ts";
import { eventRequestSchemas, MAX_IDEMPOTENCY_KEY_LENGTH } from "./schemas.ts";

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
export function createEventHandler(deps: ApiDeps) {
  const { CreateEventSchema } = eventRequestSchemas({
    maxPayloadBytes: deps.config.MAX_PAYLOAD_BYTES,
    now: () => deps.clock.now(),
    allowPrivateDestinations: deps.config.ALLOW_PRIVATE_DESTINATIONS,
  });
  const events = createEventCreator(deps.db, deps.config.MAX_EVENTS_PER_MONTH);
  return failsWith("Unable to create the event", async (req: Request, res: Response) => {
    const input = parseInput(CreateEventSchema, req.body);
    const key = idempotencyKey(req);
    const { event, created } = await events.create(
      { orgId: res.locals.orgId, ...input, idempotencyKey: key },
      deps.clock.now(),
    );
    // A repeat with the same key returns the first event, whose job was queued by the first request.
    if (created) {
      await tryQueueOperation(res.locals.log, "queueing the event", event.id, () => deps.scheduler.schedule(event));
    }
    res.json(toEventView(event));
  });
}
