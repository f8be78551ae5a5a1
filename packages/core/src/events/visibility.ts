import { Prisma } from "@punctual/db";
import { daysBefore } from "../clock.ts";

/** What "visible" depends on: the instant of the request and the search window. */
export interface VisibilityWindow {
  now: Date;
  /** `SEARCH_WINDOW_DAYS`. */
  searchWindowDays: number;
}

export const searchWindowStart = ({ now, searchWindowDays }: VisibilityWindow) => daysBefore(now, searchWindowDays);

/**
 * Contract §3: an event is visible while it is Pending or Queued, while its time is in the future,
 * or when it was sent or failed within the search window. Anything else is answered as missing.
 * A condition on the unqualified columns of `events`, for a query that reads that table alone.
 */
export function visibleEventSql(window: VisibilityWindow): Prisma.Sql {
  const since = searchWindowStart(window);
  return Prisma.sql`(status IN ('Pending', 'Queued') OR scheduled_time > ${window.now} OR sent_at >= ${since} OR failed_at >= ${since})`;
}
