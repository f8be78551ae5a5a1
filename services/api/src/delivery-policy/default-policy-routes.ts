import {
  DeliveryPolicySchema,
  parseInput,
  readDefaultDeliveryPolicy,
  redactPolicy,
  storeDefaultDeliveryPolicy,
} from "@punctual/core";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { POLICY_REFUSALS } from "./schemas.ts";

/** Where the organization's default policy is mounted, behind the API key check. */
export const DELIVERY_POLICY_PATH = "/api/delivery-policy";

const REDACTION =
  'Values of `Authorization`, `Proxy-Authorization`, `Cookie` and of header names containing `token`, `secret`, `key` or `password` (any case) are answered as `"[redacted]"`; they are stored and sent as given.';

/** GET /api/delivery-policy: the organization's default policy, `{}` when it has none. */
export const getDeliveryPolicyRoute = defineRoute({
  method: "get",
  path: DELIVERY_POLICY_PATH,
  operationId: "getDeliveryPolicy",
  summary: "The organization's default delivery policy",
  description:
    "The policy fields (contract §10.1) that events and cron runs created from now on take when they leave " +
    `them out; \`{}\` when there is none (the deployment's defaults apply). ${REDACTION}`,
  tag: "Delivery policy",
  security: "apiKey",
  failure: "Unable to read the delivery policy",
  responses: {
    "200": { description: "The default policy: only the fields it sets.", json: "DeliveryPolicy" },
  },
  handler: (deps: ApiDeps) => async (_req: Request, res: Response) => {
    res.json(redactPolicy(await readDefaultDeliveryPolicy(deps.db, res.locals.orgId)));
  },
});

/** PUT /api/delivery-policy: replaces the organization's default policy; `{}` clears it. */
export const putDeliveryPolicyRoute = defineRoute({
  method: "put",
  path: DELIVERY_POLICY_PATH,
  operationId: "setDeliveryPolicy",
  summary: "Set the organization's default delivery policy",
  description:
    "Replaces the default as a whole (a field left out is no longer part of it); `{}` clears it. It applies to " +
    "events and cron runs created afterwards, field by field where they set none of their own (their own " +
    "`headers` or `retry` replace the default's as a whole). An event keeps the policy it was created with; " +
    `a cron job's answers show its own fields over the current default. ${REDACTION}`,
  tag: "Delivery policy",
  security: "apiKey",
  body: { component: "DeliveryPolicy", schema: () => DeliveryPolicySchema },
  failure: "Unable to set the delivery policy",
  responses: {
    "200": { description: "The stored default, sensitive header values redacted.", json: "DeliveryPolicy" },
    "400": errorResponse(
      "The body is invalid; one sentence names the first problem.",
      ...POLICY_REFUSALS,
      "Unknown field 'methd'",
    ),
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, Schema) => async (req: Request, res: Response) => {
    const policy = parseInput(Schema, req.body ?? {});
    res.json(redactPolicy(await storeDefaultDeliveryPolicy(deps.db, res.locals.orgId, policy)));
  },
});

/** The organization's default delivery policy (contract §10.1). */
export const deliveryPolicyRoutes = [getDeliveryPolicyRoute, putDeliveryPolicyRoute];
