import { type Clock, type Config, type Logger, type Redis, recordFailureNoticeSent } from "@punctual/core";
import { type Db, Prisma } from "@punctual/db";
import { createTransport } from "nodemailer";

// Failure notices (contract §8): once an hour, the owner of each organization with new failures
// gets ONE e-mail listing the events (Failed To Send, Failed To Queue) and cron runs (Failed To Send)
// that failed since the last notice. `organizations.last_failure_notice_at` marks how far the
// notices have gone; it moves, to the newest failure the e-mail covered, only after the SMTP server
// accepted the message. So a failure is never announced twice by a run that succeeded, and nothing
// is lost when sending fails: the next run tries again with the same failures (and any new ones).
// If the mark cannot be written after a successful send, the next run repeats that e-mail: notices
// are at least once, like deliveries.

/** Longest list in one e-mail; the rest are counted. */
export const MAX_LISTED_FAILURES = 100;
/** What the notice says of a Failed To Queue event, which has no attempt and so no error. */
export const NOT_QUEUED_ERROR = "Could not be queued by its scheduled time";

/** The part of a nodemailer transporter this task uses, so tests can pass a failing one. */
export interface Mailer {
  sendMail(message: { from: string; to: string; subject: string; text: string }): Promise<unknown>;
}

/**
 * The SMTP transporter of `SMTP_URL` (`smtp://` with STARTTLS when offered, `smtps://` for TLS).
 * Timeouts are short: a hung server must not hold the maintenance lock for long.
 */
export function createMailer(smtpUrl: string) {
  return createTransport({ url: smtpUrl, connectionTimeout: 15_000, greetingTimeout: 15_000, socketTimeout: 30_000 });
}

export interface FailureNoticeDeps {
  db: Db;
  clock: Clock;
  config: Pick<Config, "NOTIFY_FROM" | "DELIVERY_TIMEOUT_MS"> & Partial<Pick<Config, "QUEUE_PREFIX">>;
  mailer: Mailer;
  logger: Logger;
  /** Where each sent notice is recorded for the operator's service health (with QUEUE_PREFIX). */
  redis?: Redis;
}

export interface FailureNoticeReport {
  /** Organizations whose owner was sent a notice. */
  sent: number;
  /** Organizations whose notice could not be sent (they are tried again next run). */
  failed: number;
}

/** One failed event or cron run as the notice lists it. */
export interface ListedFailure {
  kind: "event" | "cron run";
  id: string;
  /** The cron job of a run; null for an event. */
  cronJobId: string | null;
  destination: string;
  scheduledTime: Date;
  status: string;
  failedAt: Date;
  error: string | null;
}

interface PendingNotice {
  org_id: string;
  org_name: string;
  owner_email: string;
  since: Date;
}

/**
 * A failure is only considered once it is this old. Its time (`failedAt`) is when its last attempt
 * started, but the row is written when the attempt ends, up to the delivery timeout later, and
 * workers' clocks may differ a little: without the margin, a failure committed just after a run
 * could carry a time before the new mark and never be announced.
 */
export const settleMs = (config: Pick<Config, "DELIVERY_TIMEOUT_MS">) => config.DELIVERY_TIMEOUT_MS + 5 * 60_000;

const EVENT_FAILED = Prisma.sql`('Failed To Send', 'Failed To Queue')`;

export function createFailureNotices(deps: FailureNoticeDeps) {
  const { db, clock, config, mailer, logger, redis } = deps;

  /** Best effort: the record only informs the operator, the mark below is what matters. */
  async function recordSent(orgId: string): Promise<void> {
    if (!redis || config.QUEUE_PREFIX === undefined) return;
    await recordFailureNoticeSent(redis, config.QUEUE_PREFIX, clock.now(), orgId).catch((error: unknown) =>
      logger.warn({ err: error, orgId }, "could not record the failure notice"),
    );
  }

  /** Organizations with at least one failure in (mark, until], with their owner's address. */
  async function organizationsToNotify(until: Date): Promise<PendingNotice[]> {
    // The indexes (org_id, failed_at) and (org_id, status, finished_at) answer each EXISTS.
    return db.$queryRaw<PendingNotice[]>`
      SELECT o.id AS org_id, o.name AS org_name, a.email AS owner_email,
             COALESCE(o.last_failure_notice_at, o.created_at) AS since
      FROM organizations o JOIN accounts a ON a.id = o.owner_id
      WHERE EXISTS (
          SELECT 1 FROM events e
          WHERE e.org_id = o.id AND e.status IN ${EVENT_FAILED}
            AND e.failed_at > COALESCE(o.last_failure_notice_at, o.created_at) AND e.failed_at <= ${until})
        OR EXISTS (
          SELECT 1 FROM cron_runs r
          WHERE r.org_id = o.id AND r.status = 'Failed To Send'
            AND r.finished_at > COALESCE(o.last_failure_notice_at, o.created_at) AND r.finished_at <= ${until})
      ORDER BY o.id`;
  }

  /** Every failure of an organization in (since, until] as one relation: (kind, id, failed_at, …). */
  const failuresOf = (orgId: string, since: Date, until: Date) => Prisma.sql`
    SELECT 'event' AS kind, e.id, NULL::text AS cron_job_id, e.destination, e.scheduled_time, e.status,
           e.failed_at, NULL::text AS run_error
    FROM events e
    WHERE e.org_id = ${orgId} AND e.status IN ${EVENT_FAILED} AND e.failed_at > ${since} AND e.failed_at <= ${until}
    UNION ALL
    SELECT 'cron run', r.id, r.cron_job_id, j.destination, r.scheduled_for, r.status, r.finished_at, r.error
    FROM cron_runs r JOIN cron_jobs j ON j.id = r.cron_job_id
    WHERE r.org_id = ${orgId} AND r.status = 'Failed To Send' AND r.finished_at > ${since} AND r.finished_at <= ${until}`;

  /**
   * The oldest MAX_LISTED_FAILURES failures with their last error, the number of all of them and
   * the newest one's time, from one statement (one snapshot, so the count and the mark agree).
   */
  async function failures(orgId: string, since: Date, until: Date) {
    const rows = await db.$queryRaw<
      {
        kind: "event" | "cron run";
        id: string;
        cron_job_id: string | null;
        destination: string;
        scheduled_time: Date;
        status: string;
        failed_at: Date;
        error: string | null;
        total: bigint;
        newest: Date;
      }[]
    >`
      WITH listed AS (
        SELECT f.*, count(*) OVER () AS total, max(f.failed_at) OVER () AS newest
        FROM (${failuresOf(orgId, since, until)}) f
        ORDER BY f.failed_at, f.id LIMIT ${MAX_LISTED_FAILURES}
      )
      SELECT l.kind, l.id, l.cron_job_id, l.destination, l.scheduled_time, l.status, l.failed_at, l.total, l.newest,
             CASE WHEN l.kind = 'event'
               -- An event's last error, looked up only for the listed ones.
               THEN (SELECT a.error FROM event_attempts a WHERE a.event_id = l.id ORDER BY a.attempt DESC LIMIT 1)
               ELSE l.run_error END AS error
      FROM listed l ORDER BY l.failed_at, l.id`;
    const listed: ListedFailure[] = rows.map((row) => ({
      kind: row.kind,
      id: row.id,
      cronJobId: row.cron_job_id,
      destination: row.destination,
      scheduledTime: row.scheduled_time,
      status: row.status,
      failedAt: row.failed_at,
      error: row.error ?? (row.status === "Failed To Queue" ? NOT_QUEUED_ERROR : null),
    }));
    const [first] = rows;
    return { listed, total: first ? Number(first.total) : 0, newest: first?.newest ?? null };
  }

  async function notify(org: PendingNotice, until: Date): Promise<boolean> {
    const { listed, total, newest } = await failures(org.org_id, org.since, until);
    if (total === 0 || newest === null) return false;
    await mailer.sendMail({
      from: config.NOTIFY_FROM,
      to: org.owner_email,
      ...composeNotice({ orgId: org.org_id, orgName: org.org_name, since: org.since, listed, total }),
    });
    await recordSent(org.org_id);
    // Only after the server took the message. Never moves backwards (a slower, older run).
    await db.$executeRaw`
      UPDATE organizations SET last_failure_notice_at = ${newest}
      WHERE id = ${org.org_id} AND (last_failure_notice_at IS NULL OR last_failure_notice_at < ${newest})`;
    return true;
  }

  /** One run: a notice to every organization with failures since its mark. */
  return async function sendFailureNotices(): Promise<FailureNoticeReport> {
    const until = new Date(clock.now().getTime() - settleMs(config));
    const report: FailureNoticeReport = { sent: 0, failed: 0 };
    for (const org of await organizationsToNotify(until)) {
      try {
        if (await notify(org, until)) report.sent++;
      } catch (error) {
        // The mark stays where it was: the next run sends these failures again.
        report.failed++;
        logger.error({ err: error, orgId: org.org_id }, "could not send the failure notice");
      }
    }
    if (report.sent > 0 || report.failed > 0) logger.info(report, "failure notices");
    return report;
  };
}

/** Subject and plain-text body of one organization's notice. */
export function composeNotice(input: {
  orgId: string;
  orgName: string;
  since: Date;
  listed: ListedFailure[];
  total: number;
}): { subject: string; text: string } {
  const { orgId, orgName, since, listed, total } = input;
  const noun = total === 1 ? "delivery" : "deliveries";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: a name must not break the header line
  const subject = `Punctual: ${total} failed ${noun} in ${orgName.replace(/[\u0000-\u001f\u007f]+/g, " ")}`;
  const lines = [`${total} failed ${noun} in organization ${orgName} (${orgId}) since ${since.toISOString()}.`, ""];
  for (const failure of listed) {
    lines.push(
      `- ${failure.kind} ${failure.id}${failure.cronJobId ? ` (cron job ${failure.cronJobId})` : ""}`,
      `  status: ${failure.status} at ${failure.failedAt.toISOString()}`,
      `  scheduled: ${failure.scheduledTime.toISOString()}`,
      `  destination: ${failure.destination}`,
      `  last error: ${failure.error ?? "none recorded"}`,
      "",
    );
  }
  const rest = total - listed.length;
  if (rest > 0) lines.push(`… and ${rest} more not listed here.`, "");
  lines.push("Events stay searchable for the search window (GET /api/events?status=Failed%20To%20Send).");
  return { subject, text: `${lines.join("\n")}\n` };
}
