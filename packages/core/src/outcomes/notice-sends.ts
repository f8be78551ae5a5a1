import { type Db, Prisma, queryRows } from "@punctual/db";
import type { CallbackType, NoticeStatus } from "./notices.ts";

// The workers' side of the outbox: take due notices (a lease, so that two workers never send one
// at once and a crashed worker's are taken again when it runs out), and record each attempt.

/** A notice taken to be sent, with its organization's signing secrets. */
export interface DueNotice {
  id: string;
  orgId: string;
  type: string;
  webhookId: string;
  url: string;
  /** The request body: `{"type":…,"data":…}`. */
  body: string;
  attempts: number;
  /** When this attempt was due (its first, or its retry). */
  dueAt: Date;
  signingSecret: string;
  previousSigningSecret: string | null;
}

/**
 * Takes up to `limit` Pending notices due by `now` that nobody holds, for `leaseMs`: a notice is
 * sent by one worker at a time; a worker that dies leaves it to be taken again when its lease ends.
 */
export async function takeDueNotices(db: Db, now: Date, leaseMs: number, limit: number): Promise<DueNotice[]> {
  const rows = await queryRows<{
    id: string;
    org_id: string;
    type: string;
    webhook_id: string;
    url: string;
    data: string;
    attempts: number;
    next_attempt_at: Date;
    signing_secret: string;
    previous_signing_secret: string | null;
    previous_secret_until: Date | null;
  }>(
    db,
    Prisma.sql`
    WITH due AS (
      SELECT id FROM notifications
      WHERE status = 'Pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until <= ${now})
      ORDER BY next_attempt_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED
    ), taken AS (
      UPDATE notifications n SET lease_until = ${new Date(now.getTime() + leaseMs)}
      FROM due WHERE n.id = due.id
      RETURNING n.id, n.org_id, n.type, n.webhook_id, n.url, n.data, n.attempts, n.next_attempt_at
    )
    SELECT taken.*, o.signing_secret, o.previous_signing_secret, o.previous_secret_valid_until AS previous_secret_until
    FROM taken JOIN organizations o ON o.id = taken.org_id`,
  );
  return rows.map((row) => ({
    id: row.id,
    orgId: row.org_id,
    type: row.type,
    webhookId: row.webhook_id,
    url: row.url,
    // The type first, then the data as written (its keys in their documented order).
    body: `{"type":${JSON.stringify(row.type)},"data":${row.data}}`,
    attempts: row.attempts,
    dueAt: row.next_attempt_at,
    signingSecret: row.signing_secret,
    previousSigningSecret:
      row.previous_secret_until !== null && row.previous_secret_until > now ? row.previous_signing_secret : null,
  }));
}

export interface NoticeAttempt {
  at: Date;
  responseStatus: number | null;
  responseBody: string | null;
  error: string | null;
}

/**
 * Records an attempt of a notice taken by `takeDueNotices` and lets its lease go: `Sent` after a
 * 2xx, `Failed` when `retryAt` is undefined (its last attempt), else Pending again until `retryAt`.
 */
export async function recordNoticeAttempt(
  db: Db,
  id: string,
  attempt: NoticeAttempt,
  succeeded: boolean,
  retryAt: Date | undefined,
): Promise<NoticeStatus> {
  const status: NoticeStatus = succeeded ? "Sent" : retryAt === undefined ? "Failed" : "Pending";
  await db.$executeRaw`
    UPDATE notifications SET status = ${status}, attempts = attempts + 1, lease_until = NULL,
      next_attempt_at = ${retryAt ?? attempt.at}, last_attempt_at = ${attempt.at},
      last_response_status = ${attempt.responseStatus}, last_response_body = ${attempt.responseBody},
      last_error = ${attempt.error}, updated_at = ${attempt.at}
    WHERE id = ${id} AND status = 'Pending'`;
  return status;
}

/** A notice held back (a flow gate's hand back): Pending again at `at`, its lease let go, no attempt counted. */
export async function postponeNotice(db: Db, id: string, at: Date): Promise<void> {
  await db.$executeRaw`
    UPDATE notifications SET lease_until = NULL, next_attempt_at = ${at} WHERE id = ${id} AND status = 'Pending'`;
}

/** A callback as a record shows it (the event's `callback`, a cron run's). */
export interface CallbackView {
  url: string;
  type: CallbackType;
  status: NoticeStatus;
  attempts: number;
  lastAttemptAt?: string;
  lastResponseStatus: number | null;
  lastResponseBody: string | null;
  lastError: string | null;
}

/** The callbacks of these events or cron runs, by their id (those without one are missing). */
export async function readCallbacks(db: Db, subjectIds: string[]): Promise<Map<string, CallbackView>> {
  if (subjectIds.length === 0) return new Map();
  const rows = await queryRows<{
    subject_id: string;
    url: string;
    type: string;
    status: string;
    attempts: number;
    last_attempt_at: Date | null;
    last_response_status: number | null;
    last_response_body: string | null;
    last_error: string | null;
  }>(
    db,
    Prisma.sql`SELECT subject_id, url, type, status, attempts, last_attempt_at, last_response_status, last_response_body, last_error
      FROM notifications WHERE subject_id = ANY(${subjectIds}::text[]) AND kind = 'callback'`,
  );
  return new Map(
    rows.map((row) => [
      row.subject_id,
      {
        url: row.url,
        type: row.type as CallbackType,
        status: row.status as NoticeStatus,
        attempts: row.attempts,
        ...(row.last_attempt_at ? { lastAttemptAt: row.last_attempt_at.toISOString() } : {}),
        lastResponseStatus: row.last_response_status,
        lastResponseBody: row.last_response_body,
        lastError: row.last_error,
      },
    ]),
  );
}
