import { cancelEventsRoute } from "./cancel-events.ts";
import { createEventRoute } from "./create-event.ts";
import { createEventsBatchRoute } from "./create-events-batch.ts";
import { getEventRoute } from "./get-event.ts";
import { listEventsRoute } from "./list-events.ts";
import { replayEventRoute } from "./replay-event.ts";
import { replayEventsRoute } from "./replay-events.ts";
import { testDeliveryRoute } from "./test-delivery.ts";
import { updateEventRoute } from "./update-event.ts";

/** Where the events API is mounted, behind the API key check. */
export const EVENTS_PATH = "/api/events";

/**
 * Contract §3 and the console's additions (replay, test delivery): the events API, in the order the
 * router tries them and the document lists them. No two share a method and path shape, so the order
 * changes no answer.
 */
export const eventRoutes = [
  createEventRoute,
  createEventsBatchRoute,
  cancelEventsRoute,
  listEventsRoute,
  getEventRoute,
  updateEventRoute,
  replayEventRoute,
  replayEventsRoute,
  testDeliveryRoute,
];
