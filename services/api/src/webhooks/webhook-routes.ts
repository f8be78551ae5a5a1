import {
  createWebhook,
  deleteWebhook,
  listWebhooks,
  MAX_WEBHOOKS_PER_ORG,
  parseInput,
  REFUSED_DESTINATION_EXAMPLE,
  WEBHOOK_LIMIT_REACHED,
  WEBHOOK_NOT_FOUND,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { pathParameter } from "../routing/parameters.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { WEBHOOK_TYPE_INVALID, webhookRequestSchemas } from "./schemas.ts";

// Operational webhooks: an organization names where its notices of chosen types are sent (failed
// deliveries, destination health changes, the monthly quota). The notices themselves are written
// where what they tell of is decided (packages/core/src/outcomes/notices.ts) and sent by the workers.

/** Where the webhooks API is mounted, behind the API key check. */
export const WEBHOOKS_PATH = "/api/webhooks";

const WEBHOOK_ID_PARAMETER = pathParameter("webhookId", "The webhook's id (`whk_…`)");

/** POST /api/webhooks */
export const createWebhookRoute = defineRoute({
  method: "post",
  path: WEBHOOKS_PATH,
  operationId: "createWebhook",
  summary: "Create an operational webhook",
  description:
    'Notices of the given `types` are POSTed to `url` as `{ "type", "data" }`, signed like deliveries with the ' +
    "organization's signing secret, through the same delivery engine (isolated per organization, retried on " +
    "`RETRY_DELAYS_MS`). Types: `event.failed`, `cron.run.failed`, `destination.unhealthy`, `destination.healthy`, " +
    "`quota.warning` (80 % of the month's limit of scheduled events reached, once per month) and `quota.reached` " +
    `(once per month). At most ${MAX_WEBHOOKS_PER_ORG} per organization. Notices count in no monthly quota.`,
  tag: "Webhooks",
  security: "apiKey",
  body: {
    component: "CreateWebhookRequest",
    schema: (limits) => webhookRequestSchemas(limits.allowPrivateDestinations ?? false).CreateWebhookSchema,
  },
  failure: "Unable to create the webhook",
  responses: {
    "200": { description: "The webhook.", json: "Webhook" },
    "400": errorResponse(
      "The body is invalid; one sentence names the first problem.",
      "'url' is required",
      "'url' must be an http or https URL",
      REFUSED_DESTINATION_EXAMPLE,
      WEBHOOK_TYPE_INVALID,
    ),
    "403": errorResponse("The organization has its most webhooks already.", WEBHOOK_LIMIT_REACHED),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, Schema) => async (req: Request, res: Response) => {
    const { url, types } = parseInput(Schema, req.body);
    res.json(await createWebhook(deps.db, { orgId: res.locals.orgId, url, types }, deps.clock.now()));
  },
});

/** GET /api/webhooks */
export const listWebhooksRoute = defineRoute({
  method: "get",
  path: WEBHOOKS_PATH,
  operationId: "listWebhooks",
  summary: "List operational webhooks",
  description: "The organization's webhooks, oldest first.",
  tag: "Webhooks",
  security: "apiKey",
  failure: "Unable to list the webhooks",
  responses: { "200": { description: "The webhooks.", json: "WebhookList" } },
  handler: (deps: ApiDeps) => async (_req: Request, res: Response) => {
    res.json({ webhooks: await listWebhooks(deps.db, res.locals.orgId) });
  },
});

/** DELETE /api/webhooks/{webhookId} */
export const deleteWebhookRoute = defineRoute({
  method: "delete",
  path: `${WEBHOOKS_PATH}/{webhookId}`,
  operationId: "deleteWebhook",
  summary: "Delete an operational webhook",
  description: "No notice is written for it from now on; notices already written are still sent.",
  tag: "Webhooks",
  security: "apiKey",
  parameters: [WEBHOOK_ID_PARAMETER],
  failure: "Unable to delete the webhook",
  responses: {
    "204": { description: "Deleted." },
    "404": errorResponse("No webhook of the organization has this id.", WEBHOOK_NOT_FOUND),
  },
  handler: (deps: ApiDeps) => async (req: Request, res: Response) => {
    await deleteWebhook(deps.db, res.locals.orgId, String(req.params.webhookId));
    res.status(204).end();
  },
});

/** The webhooks API, in the order the document lists them. */
export const webhookRoutes = [createWebhookRoute, listWebhooksRoute, deleteWebhookRoute];
