import { Router } from "express";
import type { ApiDeps } from "../app.ts";
import { createEventHandler } from "./create-event.ts";
import { getEventHandler } from "./get-event.ts";
import { listEventsHandler } from "./list-events.ts";
import { updateEventHandler } from "./update-event.ts";

/** Contract §3: the events API, mounted at /api/events behind the API key check. */
export function eventRoutes(deps: ApiDeps): Router {
  const router = Router();
  router.post("/", createEventHandler(deps));
  router.get("/", listEventsHandler(deps));
  router.get("/:eventId", getEventHandler(deps));
  router.put("/:eventId", updateEventHandler(deps));
  return router;
}
