import { get, post, request } from "../../api/client.ts";
import type { Webhook, WebhookType } from "../../api/types.ts";

// The calls of the Webhooks page, with the console's session.

export const listWebhooks = async () => (await get<{ webhooks: Webhook[] }>("/api/webhooks")).webhooks;

export const createWebhook = (body: { url: string; types: WebhookType[] }) => post<Webhook>("/api/webhooks", body);

export const deleteWebhook = async (id: string) => {
  await request("DELETE", `/api/webhooks/${encodeURIComponent(id)}`);
};
