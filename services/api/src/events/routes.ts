import { createEventRoute } from "./create-event.ts";
import { getEventRoute } from "./get-event.ts";
import { listEventsRoute } from "./list-events.ts";
import { updateEventRoute } from "./update-event.ts";

/** Where the events API is mounted, behind the API key check. */
export const EVENTS_PATH = "/api/events";

/** Contract §3: the events API, in the order the router tries them and the document lists them. */
export const eventRoutes = [createEventRoute, listEventsRoute, getEventRoute, updateEventRoute];
