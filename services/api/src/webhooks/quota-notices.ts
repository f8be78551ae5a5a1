import { type Logger, MonthlyLimitReached, noticeQuotaUsage, quotaMonth, wantsQuotaNotices } from "@punctual/core";
import type { Db } from "@punctual/db";
import type { ApiDeps } from "../api-deps.ts";

/** How long the API trusts its answer to "does this organization want quota notices?". */
export const QUOTA_WEBHOOKS_FRESH_MS = 1_000;

export interface QuotaNotices {
  /**
   * After a change took units of the quota months of these events (a create, a batch, a replay, an
   * edit into another month): writes `quota.warning` / `quota.reached` for each month whose usage
   * crossed them. Never throws.
   */
  afterTaking(orgId: string, events: readonly { scheduledTime: Date }[], log: Logger): Promise<void>;
  /**
   * The `.catch` of a change: when it was refused for want of quota units (403), writes the notices
   * of the months it was refused for (`quota.reached` at least), then throws the error again as it
   * came (any other error too, writing nothing).
   */
  onRefusal(orgId: string, log: Logger): (error: unknown) => Promise<never>;
}

/**
 * The quota notices of the events API. An organization without a webhook asking for them costs no
 * statement but one look per second (cached here); one with such a webhook costs one statement per
 * change, which writes nothing once the month's notices exist (one per webhook, type and month).
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

  async function notice(orgId: string, months: readonly string[], refused: boolean, log: Logger): Promise<void> {
    if (months.length === 0) return;
    try {
      if (!(await wants(orgId))) return;
      await noticeQuotaUsage(db, { orgId, months, limit: monthlyLimit, refused, now: now() });
    } catch (error) {
      log.warn({ err: error, orgId }, "could not write quota notices");
    }
  }

  return {
    afterTaking: (orgId, events, log) =>
      notice(
        orgId,
        events.map((event) => quotaMonth(event.scheduledTime)),
        false,
        log,
      ),
    onRefusal: (orgId, log) => async (error) => {
      if (error instanceof MonthlyLimitReached) await notice(orgId, error.months, true, log);
      throw error;
    },
  };
}

const byDeps = new WeakMap<ApiDeps, QuotaNotices>();

/** The API's one `QuotaNotices` (one cache for every route that takes quota units). */
export function quotaNoticesOf(deps: ApiDeps): QuotaNotices {
  let notices = byDeps.get(deps);
  if (!notices) {
    notices = createQuotaNotices(deps.db, deps.config.MAX_EVENTS_PER_MONTH, () => deps.clock.now());
    byDeps.set(deps, notices);
  }
  return notices;
}
