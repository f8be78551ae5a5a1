import { WEBHOOK_TYPES, type WebhookType } from "../../api/types.ts";

/** What each notice type tells, as the form's checkboxes say it. */
export const WEBHOOK_TYPE_MEANINGS: { [Type in WebhookType]: string } = {
  "event.failed": "An event ended Failed To Send",
  "cron.run.failed": "A cron job's run ended Failed To Send",
  "destination.unhealthy": "A destination origin became Unhealthy",
  "destination.healthy": "A destination origin is Healthy again",
  "quota.warning": "80 % of the month's event limit is used",
  "quota.reached": "The month's event limit is used",
};

/** The most webhooks an organization has. */
export const MAX_WEBHOOKS = 5;

/** POST /api/webhooks of the form (types in the API's order), or what it lacks. */
export function webhookRequestOf(
  url: string,
  checked: ReadonlySet<WebhookType>,
): { body: { url: string; types: WebhookType[] } } | { problem: string } {
  const trimmed = url.trim();
  if (!trimmed) return { problem: "Please enter the URL the notices are sent to" };
  const types = WEBHOOK_TYPES.filter((type) => checked.has(type));
  if (types.length === 0) return { problem: "Please choose at least one type of notice" };
  return { body: { url: trimmed, types } };
}
