import { type Db, Prisma, queryRows } from "@punctual/db";

// Outcome notices: the callbacks of events and cron jobs (`callbackUrl`) and the organization's
// operational webhooks (`/api/webhooks`). Each notice is a row of `notifications` (an outbox),
// written in the statement that decides what it tells (a final outcome; a quota crossed, by the
// statement that took the units) or, for a destination's health, by the worker whose report changed
// it; a refusal for the quota, which commits nothing, writes its notices after its rollback. The
// workers send the rows through the same engine as every delivery (flow gate, dispatcher,
// transport), so a crash between an outcome and its notice loses nothing. A notice is no delivery:
// its own outcome makes no notice.

/** The types a callback carries: an event's or a cron run's final outcome. */
export const CALLBACK_TYPES = ["event.sent", "event.failed", "cron.run.sent", "cron.run.failed"] as const;
export type CallbackType = (typeof CALLBACK_TYPES)[number];
/** The types an operational webhook may ask for. */
export const WEBHOOK_TYPES = [
  "event.failed",
  "cron.run.failed",
  "destination.unhealthy",
  "destination.healthy",
  "quota.warning",
  "quota.reached",
] as const;
export type WebhookType = (typeof WEBHOOK_TYPES)[number];

/** The share of the month's limit at which `quota.warning` is sent. */
export const QUOTA_WARNING_SHARE = 0.8;

/** A notice's status: waiting to be sent (or retried), sent (a 2xx), or failed after its last attempt. */
export type NoticeStatus = "Pending" | "Sent" | "Failed";

/** A notice's id from what makes it single: the same notice written twice is one row. */
const noticeId = (dedupe: Prisma.Sql) => Prisma.sql`'ntf_' || md5(${dedupe})`;

/** An instant as every answer shows it: ISO 8601 UTC with milliseconds. */
export const isoSql = (column: Prisma.Sql) =>
  Prisma.sql`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

/**
 * The notices of final outcomes, as a statement for a `WITH` of the one that records them. `ended`
 * is a query of the outcomes ended there, with the columns `org_id`, `id`, `status` (`Sent` or
 * `Failed To Send`), `callback_url` and `data` (the JSON text of the notice's `data`). A callback
 * goes to `callback_url` (webhook-id `<id>.outcome`), and a failure also to each of the
 * organization's webhooks asking for `<subject>.failed` (webhook-id: the notice's own id).
 */
export function outcomeNoticesSql(subject: "event" | "cron.run", ended: Prisma.Sql, now: Prisma.Sql): Prisma.Sql {
  const failed = `${subject}.failed`;
  return Prisma.sql`
    INSERT INTO notifications (id, org_id, kind, type, subject_id, webhook_id, url, data, dedupe_key, next_attempt_at, created_at, updated_at)
    SELECT ${noticeId(Prisma.sql`n.dedupe_key`)}, n.org_id, n.kind, n.type, n.subject_id,
      COALESCE(n.webhook_id, ${noticeId(Prisma.sql`n.dedupe_key`)}), n.url, n.data, n.dedupe_key, ${now}, ${now}, ${now}
    FROM (
      SELECT o.org_id, 'callback' AS kind,
        CASE WHEN o.status = 'Sent' THEN ${`${subject}.sent`} ELSE ${failed} END AS type,
        o.id AS subject_id, o.id || '.outcome' AS webhook_id, o.callback_url AS url, o.data,
        'callback:' || o.id AS dedupe_key
      FROM (${ended}) o WHERE o.callback_url IS NOT NULL
      UNION ALL
      SELECT o.org_id, 'webhook', ${failed}, o.id, NULL, w.url, o.data, w.id || ':' || o.id
      FROM (${ended}) o JOIN webhooks w ON w.org_id = o.org_id AND ${failed} = ANY(w.types)
      WHERE o.status = 'Failed To Send'
    ) n
    ON CONFLICT (dedupe_key) DO NOTHING`;
}

/**
 * The `data` of an outcome notice as JSON text, in its documented key order, from the outcome's
 * columns: `lastResponseBody` is the first 1024 bytes the receiver answered (as kept).
 */
export function outcomeDataSql(columns: {
  id: Prisma.Sql;
  status: Prisma.Sql;
  scheduledTime: Prisma.Sql;
  attempts: Prisma.Sql;
  responseStatus: Prisma.Sql;
  responseBody: Prisma.Sql;
  error: Prisma.Sql;
}): Prisma.Sql {
  return Prisma.sql`json_build_object('id', ${columns.id}, 'status', ${columns.status},
    'scheduledTime', ${isoSql(columns.scheduledTime)}, 'attempts', ${columns.attempts},
    'lastResponseStatus', ${columns.responseStatus}, 'lastResponseBody', ${columns.responseBody},
    'lastError', ${columns.error})::text`;
}

/** Writes one operational notice to each of the organization's webhooks asking for `type` (deduplicated by `dedupe`). */
async function noticeToWebhooks(
  db: Db,
  orgId: string,
  type: WebhookType,
  subjectId: string,
  data: Record<string, unknown>,
  dedupe: string,
  now: Date,
): Promise<number> {
  return db.$executeRaw`
    INSERT INTO notifications (id, org_id, kind, type, subject_id, webhook_id, url, data, dedupe_key, next_attempt_at, created_at, updated_at)
    SELECT ${noticeId(Prisma.sql`w.id || ':' || ${dedupe}`)}, w.org_id, 'webhook', ${type}, ${subjectId},
      ${noticeId(Prisma.sql`w.id || ':' || ${dedupe}`)}, w.url, ${JSON.stringify(data)}, w.id || ':' || ${dedupe}, ${now}, ${now}, ${now}
    FROM webhooks w WHERE w.org_id = ${orgId} AND ${type} = ANY(w.types)
    ON CONFLICT (dedupe_key) DO NOTHING`;
}

/**
 * A destination origin of the organization changed health (the worker whose report changed it
 * calls this, once per change): `destination.unhealthy` or `destination.healthy` to the webhooks
 * asking for it. `since` (the change's time) makes the notice of one change single.
 */
export function noticeDestinationHealth(
  db: Db,
  change: { orgId: string; origin: string; state: "Healthy" | "Unhealthy"; consecutiveFailures: number; since: Date },
): Promise<number> {
  const type = change.state === "Unhealthy" ? "destination.unhealthy" : "destination.healthy";
  const since = change.since.toISOString();
  return noticeToWebhooks(
    db,
    change.orgId,
    type,
    change.origin,
    { origin: change.origin, state: change.state, consecutiveFailures: change.consecutiveFailures, since },
    `${type}:${change.origin}:${since}`,
    change.since,
  );
}

/**
 * The quota notices of months whose usage a statement just changed, as a statement for a `WITH` of
 * the one that takes the units: the notices commit with the change, or not at all (a change rolled
 * back after taking its units leaves none). `usage` is a query of the usage rows after the change,
 * with the columns `org_id`, `month` (the quota's `date`) and `used`: the `RETURNING` of the insert
 * into `event_monthly_usage`. `quota.warning` is written once a month's usage reaches 80 % of the
 * limit, `quota.reached` once it reaches the limit (or, with `refused`, because a change was refused
 * for want of units): each at most once per webhook and month (the dedupe key). An organization
 * without a webhook asking for them costs one look at its webhooks (indexed by `org_id`).
 */
export function quotaNoticesSql(usage: Prisma.Sql, input: { limit: number; refused?: boolean; now: Date }): Prisma.Sql {
  const { limit, now } = input;
  const warning = Math.ceil(limit * QUOTA_WARNING_SHARE);
  return Prisma.sql`
    INSERT INTO notifications (id, org_id, kind, type, subject_id, webhook_id, url, data, dedupe_key, next_attempt_at, created_at, updated_at)
    SELECT ${noticeId(Prisma.sql`t.dedupe`)}, w.org_id, 'webhook', t.type, u.org_id || ':' || t.label,
      ${noticeId(Prisma.sql`t.dedupe`)}, w.url,
      json_build_object('month', t.label, 'used', u.used, 'limit', ${limit}::int)::text,
      t.dedupe, ${now}, ${now}, ${now}
    FROM (${usage}) u
    JOIN webhooks w ON w.org_id = u.org_id
    CROSS JOIN LATERAL (VALUES ('quota.warning'), ('quota.reached')) AS k(type)
    CROSS JOIN LATERAL (
      SELECT k.type, to_char(u.month, 'YYYY-MM') AS label, w.id || ':' || k.type || ':' || to_char(u.month, 'YYYY-MM') AS dedupe
    ) t
    WHERE t.type = ANY(w.types)
      AND ((t.type = 'quota.warning' AND u.used >= ${warning})
        OR (t.type = 'quota.reached' AND (u.used >= ${limit} OR ${input.refused ?? false}::boolean)))
    ON CONFLICT (dedupe_key) DO NOTHING`;
}

/**
 * After a change was refused for want of units of quota months (`YYYY-MM-01`) and rolled back:
 * `quota.reached` for each of them (and `quota.warning` when the month's usage is past it), from
 * the usage as it stands. Nothing of the change committed, so there is no statement of its own to
 * write them in; written after the rollback, they can only be lost with a refusal that changed
 * nothing, and the next refusal for the month writes them.
 */
export async function noticeQuotaRefusal(
  db: Db,
  input: { orgId: string; months: readonly string[]; limit: number; now: Date },
): Promise<void> {
  const { orgId } = input;
  const months = [...new Set(input.months)];
  if (months.length === 0) return;
  const usage = Prisma.sql`
    SELECT ${orgId}::text AS org_id, m.month, COALESCE(usage.count, 0) AS used
    FROM unnest(${months}::date[]) AS m(month)
    LEFT JOIN event_monthly_usage usage ON usage.org_id = ${orgId} AND usage.month = m.month`;
  await db.$executeRaw(quotaNoticesSql(usage, { limit: input.limit, refused: true, now: input.now }));
}

/** Whether the organization has a webhook asking for a quota notice (the API skips the check otherwise). */
export async function wantsQuotaNotices(db: Db, orgId: string): Promise<boolean> {
  const rows = await queryRows<{ one: number }>(
    db,
    Prisma.sql`SELECT 1 AS one FROM webhooks WHERE org_id = ${orgId} AND types && ARRAY['quota.warning', 'quota.reached']::text[] LIMIT 1`,
  );
  return rows.length > 0;
}
