import { type Db, Prisma, queryRows } from "@punctual/db";
import { outcomeDataSql, outcomeNoticesSql } from "../outcomes/notices.ts";

// The attempts of a claimed (Queued) event, and the end of its delivery: Queued → Sent | Failed To
// Send (contract §6), in the statement that records the attempt, so an event can never end both
// delivered and failed.

/**
 * When each event's first attempt started, by event id (events without one are missing): the
 * lateness of a delivery another worker began, read for the deliveries ending together.
 */
export async function readFirstAttempts(db: Db, eventIds: string[]): Promise<Map<string, Date>> {
  const rows = await queryRows<{ event_id: string; at: Date }>(
    db,
    Prisma.sql`SELECT event_id, at FROM event_attempts WHERE event_id = ANY(${eventIds}::text[]) AND attempt = 1`,
  );
  return new Map(rows.map((row) => [row.event_id, row.at]));
}

interface AttemptRecord {
  at: Date;
  responseStatus: number | null;
  /** The first 1024 bytes of the answer, as UTF-8, kept in the history and told in the outcome's callback; null (or absent) when none arrived. */
  responseBody?: string | null | undefined;
  durationMs: number;
  error: string | null;
}

export interface RecordedAttempt {
  /**
   * The attempt's number, 1 for the first; 0 when nothing was recorded because the delivery was no
   * longer Queued (another job of the same event had ended it), so this one must stop too.
   */
  attempt: number;
  /** The final status this attempt set, or null when the delivery goes on (a retry follows). */
  final: "Sent" | "Failed To Send" | null;
}

export interface AttemptOfEvent extends AttemptRecord {
  eventId: string;
  succeeded: boolean;
  /** The most attempts its delivery makes (its policy's). */
  maxAttempts: number;
  /**
   * Whether no attempt follows this one if it failed, whatever its number: a `stopOnStatus` answer,
   * or a next attempt past `maxAgeMs` (contract §10.1), as the worker's retry plan says.
   */
  last: boolean;
}

/**
 * The attempts as one JSON parameter: under a burst this runs for every batch of answers, and one
 * string costs the client far less than six arrays escaped element by element.
 */
function attemptsJson(attempts: AttemptOfEvent[]): string {
  return JSON.stringify(
    attempts.map((a) => ({
      event_id: a.eventId,
      at_ms: a.at.getTime(),
      response_status: a.responseStatus,
      response_body: a.responseBody ?? null,
      duration_ms: Math.round(a.durationMs),
      error: a.error,
      succeeded: a.succeeded,
      max_attempts: a.maxAttempts,
      last: a.last,
    })),
  );
}

/**
 * Records attempts of Queued events and, in the same statement, ends each delivery that succeeded
 * (`Queued → Sent` with `sentAt`) or failed with no attempt to follow: its `last`, or number
 * `maxAttempts` (`Queued → Failed To Send` with `failedAt`). Attempts are numbered in Postgres, so a re-run job continues the count
 * instead of starting over. One statement (one commit) for the whole batch.
 * An attempt of an event that is no longer Queued is not recorded and answers attempt 0: a second
 * job delivering the same event (a worker that lost its lock) then stops instead of retrying an
 * ended delivery forever. Each delivery ended here writes its outcome notices in the same statement
 * (its callback, the organization's `event.failed` webhooks: outcomes/notices.ts).
 */
export async function recordAttempts(db: Db, attempts: AttemptOfEvent[]): Promise<RecordedAttempt[]> {
  if (attempts.length === 0) return [];
  const rows = await queryRows<{ event_id: string; attempt: number; final: string | null }>(
    db,
    Prisma.sql`
    WITH input AS (
      SELECT event_id, to_timestamp(at_ms / 1000.0) AS at, response_status, duration_ms, error, response_body,
        succeeded, max_attempts, last
      FROM json_to_recordset(${attemptsJson(attempts)}::json)
        AS t(event_id text, at_ms bigint, response_status int, duration_ms int, error text, response_body text,
          succeeded boolean, max_attempts int, last boolean)
    ), numbered AS (
      SELECT input.*, COALESCE((SELECT MAX(a.attempt) FROM event_attempts a WHERE a.event_id = input.event_id), 0) + 1 AS attempt,
        (SELECT e.status = 'Queued' FROM events e WHERE e.id = input.event_id) AS queued
      FROM input
    ), recorded AS (
      INSERT INTO event_attempts (event_id, attempt, at, response_status, response_body, duration_ms, error)
      SELECT event_id, attempt, at, response_status, response_body, duration_ms, error FROM numbered WHERE queued
    ), finished AS (
      UPDATE events e SET
        status = CASE WHEN n.succeeded THEN 'Sent' ELSE 'Failed To Send' END,
        sent_at = CASE WHEN n.succeeded THEN n.at END,
        failed_at = CASE WHEN n.succeeded THEN NULL ELSE n.at END,
        updated_at = n.at
      FROM numbered n
      WHERE e.id = n.event_id AND e.status = 'Queued' AND (n.succeeded OR n.last OR n.attempt >= n.max_attempts)
      RETURNING e.id, e.status, e.org_id, e.callback_url, e.scheduled_time
    ), noticed AS (${outcomeNoticesSql(
      "event",
      Prisma.sql`SELECT f.org_id, f.id, f.status, f.callback_url, ${outcomeDataSql({
        id: Prisma.sql`f.id`,
        status: Prisma.sql`f.status`,
        scheduledTime: Prisma.sql`f.scheduled_time`,
        attempts: Prisma.sql`n.attempt`,
        responseStatus: Prisma.sql`n.response_status`,
        responseBody: Prisma.sql`n.response_body`,
        error: Prisma.sql`n.error`,
      })} AS data FROM finished f JOIN numbered n ON n.event_id = f.id`,
      Prisma.sql`now()`,
    )}
    )
    SELECT n.event_id, CASE WHEN n.queued THEN n.attempt ELSE 0 END AS attempt, f.status AS final
    FROM numbered n LEFT JOIN finished f ON f.id = n.event_id`,
  );
  const byId = new Map(rows.map((row) => [row.event_id, row]));
  return attempts.map((attempt) => {
    const row = byId.get(attempt.eventId);
    if (!row) throw new Error(`attempt of event ${attempt.eventId} was not recorded`);
    return { attempt: row.attempt, final: row.final as RecordedAttempt["final"] };
  });
}
