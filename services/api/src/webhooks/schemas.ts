import {
  checkDestination,
  FORBIDDEN_DESTINATION_MESSAGE,
  literalHostAddress,
  MAX_WEBHOOKS_PER_ORG,
  refusedDestinationMessage,
  WEBHOOK_TYPES,
} from "@punctual/core";
import { z } from "zod";

/**
 * A URL notices are sent to (`callbackUrl`, a webhook's `url`): the rules of `destination`, judged
 * by the worker's own `checkDestination` (an absolute http or https URL of at most 2048 characters;
 * unless private destinations are allowed, no literal loopback, private, link-local or metadata
 * address), each mistake said with the field's name.
 */
export function noticeUrlSchema(field: string, allowPrivateDestinations: boolean) {
  return z
    .string({ error: `'${field}' must be a string` })
    .superRefine((text, ctx) => {
      const checked = checkDestination(text, allowPrivateDestinations);
      if (checked.ok) return;
      const message =
        checked.reason === FORBIDDEN_DESTINATION_MESSAGE
          ? refusedDestinationMessage(literalHostAddress(text) ?? new URL(text).hostname)
          : checked.reason.replace(/^Destination/, `'${field}'`);
      ctx.addIssue({ code: "custom", message });
    })
    .meta({ format: "uri", maxLength: 2048 });
}

const CALLBACK_DESCRIPTION =
  "Told of each final outcome of its deliveries (`Sent`, `Failed To Send`) by a signed POST " +
  '`{ "type", "data" }` (see receiving.md); same rules as `destination`';

/** `callbackUrl` of a create: absent means none. */
export const callbackUrlField = (allowPrivate: boolean) =>
  noticeUrlSchema("callbackUrl", allowPrivate).optional().meta({ description: CALLBACK_DESCRIPTION });

/** `callbackUrl` of an edit: null removes it, absent keeps it. */
export const callbackUrlEditField = (allowPrivate: boolean) =>
  noticeUrlSchema("callbackUrl", allowPrivate)
    .nullable()
    .optional()
    .meta({ description: `${CALLBACK_DESCRIPTION}; null removes it` });

/**
 * Every record's `callbackUrl`: always sent, null when none, so required in the document (a field
 * more in an answer breaks no client; only a request must never require a new one).
 */
export const callbackUrlAnswer = z
  .string()
  .nullable()
  .meta({ description: "Where the final outcome of its deliveries is POSTed; null: none" });

/** A delivered notice's state, as an event's `callback` shows it. */
export const CallbackStateSchema = z
  .object({
    url: z.string(),
    type: z.enum(["event.sent", "event.failed", "cron.run.sent", "cron.run.failed"]),
    status: z.enum(["Pending", "Sent", "Failed"]),
    attempts: z.number().int(),
    lastAttemptAt: z.string().meta({ format: "date-time" }).optional(),
    lastResponseStatus: z.number().int().nullable(),
    lastResponseBody: z.string().nullable(),
    lastError: z.string().nullable(),
  })
  .meta({
    id: "CallbackState",
    description:
      "The callback of the delivery's final outcome: `Pending` until sent (retried on RETRY_DELAYS_MS), then `Sent` or `Failed`",
  });

export const WEBHOOK_TYPE_INVALID = `Each type must be one of ${WEBHOOK_TYPES.join(", ")}`;

export function webhookRequestSchemas(allowPrivateDestinations: boolean) {
  const CreateWebhookSchema = z
    .strictObject({
      url: noticeUrlSchema("url", allowPrivateDestinations).meta({
        description: "Where the notices are POSTed (same rules as an event's `destination`)",
      }),
      types: z
        .array(z.enum(WEBHOOK_TYPES, { error: WEBHOOK_TYPE_INVALID }), { error: "'types' must be an array" })
        .min(1, { error: "'types' must name at least one type" })
        .max(WEBHOOK_TYPES.length, { error: `'types' must name at most ${WEBHOOK_TYPES.length} types` })
        .meta({ description: "The notices it receives" }),
    })
    .meta({ id: "CreateWebhookRequest" });
  return { CreateWebhookSchema };
}

export const WebhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    types: z.array(z.enum(WEBHOOK_TYPES)),
    createdAt: z.string().meta({ format: "date-time" }),
  })
  .meta({ id: "Webhook", description: `An operational webhook (at most ${MAX_WEBHOOKS_PER_ORG} per organization)` });

export const WebhookListSchema = z.object({ webhooks: z.array(WebhookSchema) }).meta({ id: "WebhookList" });
