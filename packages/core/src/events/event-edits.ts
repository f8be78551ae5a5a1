import { type Db, Prisma } from "@punctual/db";
import { rawPayloadProblem } from "../delivery-policy/policy-schema.ts";
import { badRequest, notFound } from "../errors.ts";
import { applyPolicyEdit, type DeliveryPolicyEdit, policyColumn } from "../organizations/stored-delivery-policy.ts";
import { quotaNoticesSql } from "../outcomes/notices.ts";
import { EVENT_COLUMNS, EVENT_NOT_FOUND, type EventRecord, type EventRow, eventFromRow } from "./event-record.ts";
import { type Labels, labelsColumn } from "./labels.ts";
import { monthlyLimitReached, quotaMonth } from "./monthly-quota.ts";

// A client's edit or cancel of a Pending event (Pending → Cancelled, contract §6). An event that
// is no longer Pending is refused: a worker may already be delivering it.

export const ONLY_PENDING = "Only Pending events can be updated";

interface EventChanges {
  payload?: string | undefined;
  destination?: string | undefined;
  scheduledTime?: Date | undefined;
  cancel?: boolean | undefined;
  deliveryPolicy?: DeliveryPolicyEdit | undefined;
  /** A new flow key; null takes the event out of its flow; undefined keeps it (contract §10.2). */
  flowKey?: string | null | undefined;
  /** A new callback URL; null removes it; undefined keeps it. */
  callbackUrl?: string | null | undefined;
  /** New labels, replacing all of them; null (or `{}`) removes them; undefined keeps them (contract §10.5). */
  labels?: Labels | null | undefined;
}

/**
 * Applies a client's edit to a Pending event (contract §3 PUT). The event row is locked first, so a
 * worker's claim either happens before (the edit is refused: not Pending) or after (the claim sees
 * the edited or cancelled event). Moving an event to another month moves its quota unit (and writes
 * the quota notices of the month it moves into, in the same transaction); cancelling gives the unit
 * back. Policy fields are applied to the stored policy (`applyPolicyEdit`); an edit
 * whose effective payload cannot be sent as its raw body says (`rawPayloadProblem`) is refused
 * before anything is written.
 */
export async function updatePendingEvent(
  db: Db,
  orgId: string,
  eventId: string,
  changes: EventChanges,
  now: Date,
  monthlyLimit: number,
): Promise<EventRecord> {
  return db.$transaction(async (tx) => {
    const [current] = await tx.$queryRaw<EventRow[]>`
      SELECT ${EVENT_COLUMNS} FROM events WHERE id = ${eventId} AND org_id = ${orgId} FOR UPDATE`;
    if (!current) throw notFound(EVENT_NOT_FOUND);
    if (current.status !== "Pending") throw badRequest(ONLY_PENDING);
    const payload = changes.payload ?? current.payload;
    const deliveryPolicy = applyPolicyEdit(eventFromRow(current).deliveryPolicy, changes.deliveryPolicy);
    const rawProblem = rawPayloadProblem(payload, deliveryPolicy);
    if (rawProblem !== undefined) throw badRequest(rawProblem);

    const oldMonth = quotaMonth(current.scheduled_time);
    const scheduledTime = changes.scheduledTime ?? current.scheduled_time;
    const newMonth = quotaMonth(scheduledTime);
    if (changes.cancel) {
      await tx.$executeRaw`
        UPDATE event_monthly_usage SET count = count - 1
        WHERE org_id = ${orgId} AND month = ${oldMonth}::date AND count > 0`;
    } else if (newMonth !== oldMonth) {
      // With the month's quota notices: they commit with the edit, or not at all.
      const taken = await tx.$queryRaw<unknown[]>`
        WITH quota AS (
          INSERT INTO event_monthly_usage AS usage (org_id, month, count)
          VALUES (${orgId}, ${newMonth}::date, 1)
          ON CONFLICT (org_id, month) DO UPDATE SET count = usage.count + 1
          WHERE usage.count < ${monthlyLimit}
          RETURNING org_id, month, count AS used
        ), notices AS (${quotaNoticesSql(Prisma.sql`SELECT * FROM quota`, { limit: monthlyLimit, now })})
        SELECT 1 FROM quota`;
      if (taken.length === 0) throw monthlyLimitReached(monthlyLimit, [newMonth]);
      await tx.$executeRaw`
        UPDATE event_monthly_usage SET count = count - 1
        WHERE org_id = ${orgId} AND month = ${oldMonth}::date AND count > 0`;
    }

    const [updated] = await tx.$queryRaw<EventRow[]>`
      UPDATE events SET
        payload = ${payload},
        destination = ${changes.destination ?? current.destination},
        scheduled_time = ${scheduledTime},
        status = ${changes.cancel ? "Cancelled" : "Pending"},
        delivery_policy = ${policyColumn(deliveryPolicy)}::jsonb,
        flow_key = ${changes.flowKey === undefined ? current.flow_key : changes.flowKey},
        callback_url = ${changes.callbackUrl === undefined ? current.callback_url : changes.callbackUrl},
        labels = ${changes.labels === undefined ? labelsColumn(eventFromRow(current).labels) : labelsColumn(changes.labels)}::jsonb,
        updated_at = ${now}
      WHERE id = ${eventId} AND status = 'Pending'
      RETURNING ${EVENT_COLUMNS}`;
    if (!updated) throw new Error(`event ${eventId} changed while locked`);
    return eventFromRow(updated);
  });
}
