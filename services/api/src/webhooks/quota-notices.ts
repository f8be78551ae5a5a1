import { type Logger, MonthlyLimitReached, noticeQuotaRefusal, wantsQuotaNotices } from "@punctual/core";
import type { Db } from "@punctual/db";
import type { ApiDeps } from "../api-deps.ts";

// The quota notices of refusals. A change that takes quota units writes the notices of the months
// it crossed in its own statement (packages/core/src/outcomes/notices.ts, `quotaNoticesSql`), so
// they commit with it; a change refused for want of units commits nothing, and its `quota.reached`
// is written here, after the rollback.

/** How long the API trusts its answer to "does this organization want quota notices?". */
export const QUOTA_WEBHOOKS_FRESH_MS = 1_000;

export interface QuotaNotices {
  /**
   * The `.catch` of a change that takes quota units: when it was refused for want of them (403),
   * writes the notices of the months it was refused for (`quota.reached` at least), then throws the
   * error again as it came (any other error too, writing nothing).
   */
  onRefusal(orgId: string, log: Logger): (error: unknown) => Promise<never>;
}

/**
 * The refusals' quota notices. An organization without a webhook asking for them costs no statement
 * but one look per second (cached here); one with such a webhook costs one statement per refusal,
 * which writes nothing once the month's notices exist (one per webhook, type and month). A failure
 * to write them is logged and never changes the refusal's answer.
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
    onRefusal: (orgId, log) => async (error) => {
      if (error instanceof MonthlyLimitReached && error.months.length > 0) {
        try {
          if (await wants(orgId)) {
            await noticeQuotaRefusal(db, { orgId, months: error.months, limit: monthlyLimit, now: now() });
          }
        } catch (failure) {
          log.warn({ err: failure, orgId }, "could not write quota notices");
        }
      }
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
