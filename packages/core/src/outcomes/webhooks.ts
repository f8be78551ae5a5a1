import type { Db } from "@punctual/db";
import { forbidden, notFound } from "../errors.ts";
import { newId } from "../ids.ts";
import type { WebhookType } from "./notices.ts";

// An organization's operational webhooks: where its notices of the chosen types are sent.

/** The most webhooks one organization keeps. */
export const MAX_WEBHOOKS_PER_ORG = 5;
export const WEBHOOK_LIMIT_REACHED = `Webhook limit of ${MAX_WEBHOOKS_PER_ORG} reached for this organization`;
export const WEBHOOK_NOT_FOUND = "Unable to find webhook";

export interface WebhookView {
  id: string;
  url: string;
  types: WebhookType[];
  createdAt: string;
}

const view = (row: { id: string; url: string; types: string[]; createdAt: Date }): WebhookView => ({
  id: row.id,
  url: row.url,
  types: row.types as WebhookType[],
  createdAt: row.createdAt.toISOString(),
});

/**
 * Adds a webhook unless the organization has its limit already. The count and the insert run in
 * one transaction under the organization's row lock, so two creates at once cannot both pass it.
 */
export async function createWebhook(
  db: Db,
  input: { orgId: string; url: string; types: WebhookType[] },
  now: Date,
): Promise<WebhookView> {
  return db.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT 1 FROM organizations WHERE id = ${input.orgId} FOR UPDATE`;
    const count = await tx.webhook.count({ where: { orgId: input.orgId } });
    if (count >= MAX_WEBHOOKS_PER_ORG) throw forbidden(WEBHOOK_LIMIT_REACHED);
    const row = await tx.webhook.create({
      data: { id: newId("whk"), orgId: input.orgId, url: input.url, types: [...new Set(input.types)], createdAt: now },
    });
    return view(row);
  });
}

export async function listWebhooks(db: Db, orgId: string): Promise<WebhookView[]> {
  const rows = await db.webhook.findMany({ where: { orgId }, orderBy: [{ createdAt: "asc" }, { id: "asc" }] });
  return rows.map(view);
}

/** Removes a webhook of the organization; notices already written for it are still sent. */
export async function deleteWebhook(db: Db, orgId: string, id: string): Promise<void> {
  const { count } = await db.webhook.deleteMany({ where: { id, orgId } });
  if (count === 0) throw notFound(WEBHOOK_NOT_FOUND);
}
