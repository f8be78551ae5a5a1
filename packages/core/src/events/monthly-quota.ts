import { AppError } from "../errors.ts";

// The monthly quota (contract §3) is a counter row per organization and UTC month
// (`event_monthly_usage`), changed in the same statement as the event that takes or gives back a
// unit (creates, edits, cancels, replays), so concurrent changes can never pass the limit.

/** First day of the UTC month of an instant, as `YYYY-MM-01` (the quota's bucket). */
export function quotaMonth(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, "0")}-01`;
}

/**
 * The refusal (403) of a change that needs units of months whose quota is used up. It names those
 * months (`YYYY-MM-01`), so that the API can tell the organization's webhooks (`quota.reached`).
 */
export class MonthlyLimitReached extends AppError {
  constructor(
    limit: number,
    readonly months: readonly string[],
  ) {
    super("FORBIDDEN", `Monthly limit of ${limit} scheduled events reached for this organization`);
  }
}

/** The refusal of a change that needs units of `months`, whose quota is used up. */
export const monthlyLimitReached = (limit: number, months: readonly string[]) => new MonthlyLimitReached(limit, months);
