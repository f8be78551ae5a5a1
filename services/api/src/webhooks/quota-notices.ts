import { type Logger, noticeQuotaUsage, quotaMonth, wantsQuotaNotices } from "@punctual/core";
import type { Db } from "@punctual/db";

/** How long the API trusts its answer to "does this organization want quota notices?". */
export const QUOTA_WEBHOOKS_FRESH_MS = 1_000;

export interface QuotaNotices {
  /**
   * After a create took a unit of the month of `scheduledTime` (or was refused for want of one):
   * writes `quota.warning` / `quota.reached` when the month's usage crossed them. Never throws.
   */
  afterCreate(orgId: string, scheduledTime: Date, refused: boolean, log: Logger): Promise<void>;
}

/**
 * The quota notices of the events API. An organization without a webhook asking for them costs no
 * statement but one look per second (cached here); one with such a webhook costs one statement per
 * create, which writes nothing once the month's notices exist (one per webhook, type and month).
 */
export function createQuotaNotices(db: Db, monthlyLimit: number, now: () => Date): QuotaNotices {
  const wanted = new Map<string, { wants: boolean; at: number }>();

  async function wants(orgId: string): Promise<boolean> {
    const cached = wanted.get(orgId);
    if (cached && Date.now() - cached.at < QUOTA_WEBHOOKS_FRESH_MS) return cached.wants;
    const answer = await wantsQuotaNotices(db, orgId);
    if (wanted.size > 10_000) wanted.clear();
    wanted.set(orgId, { wants: answer, at: Date.now() });
    return answer;
  }

  return {
    async afterCreate(orgId, scheduledTime, refused, log) {
      try {
        if (!(await wants(orgId))) return;
        await noticeQuotaUsage(db, {
          orgId,
          month: quotaMonth(scheduledTime),
          limit: monthlyLimit,
          refused,
          now: now(),
        });
      } catch (error) {
        log.warn({ err: error, orgId }, "could not write quota notices");
      }
    },
  };
}
