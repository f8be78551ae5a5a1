import {
  badRequest,
  buildDeliveryRequest,
  mergeWithDefault,
  newId,
  parseInput,
  REFUSED_DESTINATION_EXAMPLE,
  rawPayloadProblem,
  readDefaultDeliveryPolicy,
  readSigningSecrets,
  resolvePolicy,
} from "@punctual/core";
import { createHttpTransport } from "@punctual/worker/http-transport";
import type { Request, Response } from "express";
import type { ApiDeps } from "../api-deps.ts";
import { POLICY_REFUSALS_WITH_PAYLOAD } from "../delivery-policy/schemas.ts";
import { TOO_MANY_REQUESTS } from "../rate-limit/rate-limit.ts";
import { createTestDeliveryLimit, TOO_MANY_TEST_DELIVERIES } from "../rate-limit/test-deliveries.ts";
import { BODY_RESPONSES, defineRoute, errorResponse } from "../routing/route.ts";
import { DESTINATION_URL, eventRequestSchemas, payloadTooLong, type TestDeliveryResult } from "./schemas.ts";

/** The payload of a test delivery that names none. */
const DEFAULT_PAYLOAD = "{}";

/** A fresh `webhook-id` that no event has: receivers that deduplicate by it never drop a test. */
const testWebhookId = () => newId("evt").replace(/^evt_/, "evt_test_");

/**
 * POST /api/events/test: one signed delivery sent now, by the worker's own transport and signing,
 * so the receiver sees exactly what a real delivery looks like (body, headers, signatures with the
 * organization's current secrets). Nothing is stored and no quota is taken; the organization's
 * TEST_DELIVERIES_PER_MINUTE budget is.
 */
export const testDeliveryRoute = defineRoute({
  method: "post",
  path: "/api/events/test",
  operationId: "testDelivery",
  summary: "Send a test delivery now",
  description:
    "Sends one signed delivery to `destination` now, as a real one would be sent (same body shape, headers " +
    "and signatures; `webhook-id` is a fresh `evt_test_…` id; `scheduledTime` is now), and answers with what " +
    "the receiver did. Creates no event, is not counted against the monthly limit, follows no redirect and " +
    "obeys the destination rules. Limited per organization to `TEST_DELIVERIES_PER_MINUTE` a minute. The " +
    "delivery policy fields (contract §10.1) are taken as an event's would be: each one left out from the " +
    "organization's default, else the deployment's; `retry` is checked but a test delivery is never retried.",
  tag: "Events",
  security: "apiKey",
  body: { component: "TestDeliveryRequest", schema: (limits) => eventRequestSchemas(limits).TestDeliverySchema },
  failure: "Unable to send the test delivery",
  responses: {
    "200": {
      description:
        "The receiver's answer: its status, the time it took and the first 1024 bytes of its body; or, when no " +
        "answer came (refused, timed out, a forbidden address), the error and null status and body.",
      json: "TestDeliveryResult",
    },
    "400": errorResponse(
      "The body is invalid, or the destination is not allowed.",
      DESTINATION_URL,
      REFUSED_DESTINATION_EXAMPLE,
      payloadTooLong,
      "'destination' is required",
      ...POLICY_REFUSALS_WITH_PAYLOAD,
    ),
    "429": {
      description:
        "Over the organization's test deliveries per minute, or over the request rate limit (contract §7); " +
        "`Retry-After` says when to try again.",
      json: "Error",
      messages: [TOO_MANY_TEST_DELIVERIES, TOO_MANY_REQUESTS],
      headers: ["Retry-After"],
    },
    ...BODY_RESPONSES,
  },
  handler: (deps: ApiDeps, TestDeliverySchema) => {
    const limit = createTestDeliveryLimit(deps);
    return async (req: Request, res: Response) => {
      const { destination, payload = DEFAULT_PAYLOAD, ...own } = parseInput(TestDeliverySchema, req.body);
      const orgId = res.locals.orgId;
      // As an event created now would store it: its own fields over the organization's default.
      const stored = mergeWithDefault(own, await readDefaultDeliveryPolicy(deps.db, orgId));
      const problem = rawPayloadProblem(payload, stored);
      if (problem !== undefined) throw badRequest(problem);
      const policy = resolvePolicy(stored, deps.config);
      await limit.take(orgId, res, res.locals.log);
      const secrets = await readSigningSecrets(deps.db, orgId);
      if (!secrets) throw new Error(`organization ${orgId} has no signing secret`);
      const now = deps.clock.now();
      const request = buildDeliveryRequest({
        webhookId: testWebhookId(),
        payload,
        scheduledTime: now,
        ...secrets,
        now,
        policy,
      });
      // A transport of its own, closed after its one request: test deliveries are rare, and the API
      // keeps no connections open to the destinations its callers name.
      const transport = createHttpTransport({
        timeoutMs: policy.timeoutMs,
        allowPrivateDestinations: deps.config.ALLOW_PRIVATE_DESTINATIONS,
        connectionsPerOrigin: 1,
      });
      const outcome = await transport.send({
        url: destination,
        method: request.method,
        body: request.body,
        headers: request.headers,
        timeoutMs: policy.timeoutMs,
      });
      transport.close().catch((error: unknown) => res.locals.log.debug({ err: error }, "closing a test transport"));
      res.locals.log.info(
        { orgId, responseStatus: outcome.responseStatus, durationMs: outcome.durationMs, kind: outcome.kind },
        "test delivery sent",
      );
      const body: TestDeliveryResult = {
        responseStatus: outcome.responseStatus,
        durationMs: outcome.durationMs,
        responseBody: outcome.responseBody,
        error: outcome.error,
      };
      res.json(body);
    };
  },
});
