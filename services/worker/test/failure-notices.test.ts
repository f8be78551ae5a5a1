import type { AddressInfo } from "node:net";
import { ConfigError, fixedClock, loadConfig, MAINTENANCE_JOBS, newId, QUEUE_NAMES, systemClock } from "@punctual/core";
import { Queue } from "bullmq";
import { SMTPServer } from "smtp-server";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import {
  createFailureNotices,
  createMailer,
  MAX_LISTED_FAILURES,
  NOT_QUEUED_ERROR,
  settleMs,
} from "../src/maintenance/failure-notices.ts";
import { createMaintenance } from "../src/maintenance/index.ts";

// Failure notices (contract §8) sent through nodemailer to a real SMTP server (the smtp-server
// package) listening on a free port in this process.

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

interface ReceivedMail {
  from: string;
  to: string[];
  subject: string;
  text: string;
}

interface MailServer {
  url: string;
  mails: ReceivedMail[];
  /** While true the server refuses every message with a temporary error. */
  failing: boolean;
  close(): Promise<void>;
}

/** Quoted-printable (RFC 2045) → UTF-8 text. */
function decodeQuotedPrintable(encoded: string): string {
  const bytes: number[] = [];
  const text = encoded.replace(/=\r\n/g, "");
  for (let i = 0; i < text.length; i++) {
    const hex = text.slice(i + 1, i + 3);
    if (text[i] === "=" && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(...Buffer.from(text[i] ?? "", "utf8"));
    }
  }
  return Buffer.from(bytes).toString("utf8");
}

/** Subject and text of a single-part message, whatever transfer encoding nodemailer chose. */
function decodeMessage(raw: string): { subject: string; text: string } {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, " ");
  const body = raw.slice(split + 4);
  const header = (name: string) => new RegExp(`^${name}: (.*)$`, "im").exec(head)?.[1]?.trim() ?? "";
  const encoding = header("Content-Transfer-Encoding").toLowerCase();
  const text =
    encoding === "base64"
      ? Buffer.from(body, "base64").toString("utf8")
      : encoding === "quoted-printable"
        ? decodeQuotedPrintable(body)
        : body;
  return { subject: header("Subject"), text: text.replace(/\r\n/g, "\n") };
}

async function startMailServer(): Promise<MailServer> {
  const state: MailServer = { url: "", mails: [], failing: false, close: async () => {} };
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        if (state.failing) {
          const error: Error & { responseCode?: number } = new Error("Mailbox busy, try again later");
          error.responseCode = 451;
          callback(error);
          return;
        }
        const { subject, text } = decodeMessage(Buffer.concat(chunks).toString("utf8"));
        const from = session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address;
        state.mails.push({ from, to: session.envelope.rcptTo.map((rcpt) => rcpt.address), subject, text });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.server.address() as AddressInfo;
  state.url = `smtp://127.0.0.1:${port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

let context: TestContext;
let smtp: MailServer;
let mailer: ReturnType<typeof createMailer>;
const START = new Date("2031-03-10T12:00:00.000Z");
const clock = fixedClock(START);
/** Well before the settle margin: what the next run must include. */
const settled = (ago = 30 * MINUTE) => new Date(clock.now().getTime() - ago);

beforeAll(async () => {
  context = await createTestContext();
  smtp = await startMailServer();
  mailer = createMailer(smtp.url);
});
afterAll(async () => {
  mailer.close();
  await smtp.close();
  await context.close();
});
// Every test starts at the same instant, with no organization (and so no failure) left by another
// and an empty mailbox: each passes alone and in any order.
beforeEach(async () => {
  clock.set(START);
  await context.db.organization.deleteMany();
  smtp.mails.length = 0;
  smtp.failing = false;
});

const notices = () =>
  createFailureNotices({
    db: context.db,
    clock,
    config: { ...context.config, NOTIFY_FROM: "Punctual Alerts <alerts@punctual.test>" },
    mailer,
    logger: context.logger,
  });

async function ownerOf(org: TestOrganization): Promise<string> {
  const row = await context.db.organization.findUniqueOrThrow({
    where: { id: org.orgId },
    select: { owner: { select: { email: true } } },
  });
  return row.owner.email;
}

const markOf = async (org: TestOrganization) =>
  (await context.db.organization.findUniqueOrThrow({ where: { id: org.orgId } })).lastFailureNoticeAt;

async function insertEvent(
  org: TestOrganization,
  status: string,
  options: { failedAt?: Date; sentAt?: Date; errors?: string[] } = {},
): Promise<string> {
  const id = newId("evt");
  const scheduledTime = new Date((options.failedAt ?? options.sentAt ?? clock.now()).getTime() - 20_000);
  await context.db.$executeRaw`
    INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, sent_at, failed_at, created_at, updated_at)
    VALUES (${id}, ${org.orgId}, ${`https://receiver.example/${id}`}, 'p', ${scheduledTime}, ${status},
            ${options.sentAt ?? null}, ${options.failedAt ?? null}, ${scheduledTime}, ${scheduledTime})`;
  for (const [n, error] of (options.errors ?? []).entries()) {
    await context.db.$executeRaw`
      INSERT INTO event_attempts (event_id, attempt, at, response_status, duration_ms, error)
      VALUES (${id}, ${n + 1}, ${scheduledTime}, 503, 12, ${error})`;
  }
  return id;
}

async function insertCronRun(org: TestOrganization, status: string, finishedAt: Date, error: string | null) {
  const cronJobId = newId("cron");
  await context.db.$executeRaw`
    INSERT INTO cron_jobs (id, org_id, expression, timezone, destination, payload, status, created_at, updated_at)
    VALUES (${cronJobId}, ${org.orgId}, '*/5 * * * *', 'UTC', 'https://cron.example/hook', 'c', 'Active',
            ${settled(HOUR)}, ${settled(HOUR)})`;
  const id = newId("run");
  await context.db.$executeRaw`
    INSERT INTO cron_runs (id, cron_job_id, org_id, cron, scheduled_for, status, attempts, request_data, error, finished_at, created_at, updated_at)
    VALUES (${id}, ${cronJobId}, ${org.orgId}, '*/5 * * * *', ${new Date(finishedAt.getTime() - 20_000)}, ${status}, 4, 'c',
            ${error}, ${finishedAt}, ${finishedAt}, ${finishedAt})`;
  return { id, cronJobId };
}

const mailsTo = async (org: TestOrganization) => {
  const owner = await ownerOf(org);
  return smtp.mails.filter((mail) => mail.to.includes(owner));
};

describe("failure notices", () => {
  it("sends each organization with failures one e-mail listing them, and none to the others", async () => {
    const alpha = await createTestOrganization(context, "Alpha");
    const beta = await createTestOrganization(context, "Beta");
    const quiet = await createTestOrganization(context, "Quiet");

    const failedToSend = await insertEvent(alpha, "Failed To Send", {
      failedAt: settled(50 * MINUTE),
      errors: ["HTTP 503", "HTTP 502", "connect ECONNREFUSED"],
    });
    const failedToQueue = await insertEvent(alpha, "Failed To Queue", { failedAt: settled(40 * MINUTE) });
    const run = await insertCronRun(alpha, "Failed To Send", settled(35 * MINUTE), "Timeout after 10000 ms");
    // Not failures: never listed.
    const sent = await insertEvent(alpha, "Sent", { sentAt: settled(45 * MINUTE) });
    const cancelled = await insertEvent(alpha, "Cancelled");
    const sentRun = await insertCronRun(alpha, "Sent", settled(30 * MINUTE), null);
    const betaFailure = await insertEvent(beta, "Failed To Send", { failedAt: settled(), errors: ["HTTP 500"] });
    await insertEvent(quiet, "Sent", { sentAt: settled() });

    const report = await notices()();

    expect(report).toEqual({ sent: 2, failed: 0 });
    expect(smtp.mails).toHaveLength(2);
    const [toAlpha] = await mailsTo(alpha);
    const [toBeta] = await mailsTo(beta);
    expect(await mailsTo(quiet)).toEqual([]);
    expect(toAlpha?.from).toBe("alerts@punctual.test");
    expect(toAlpha?.subject).toBe("Punctual: 3 failed deliveries in Alpha");
    const text = toAlpha?.text ?? "";
    for (const expected of [
      `event ${failedToSend}`,
      `https://receiver.example/${failedToSend}`,
      "status: Failed To Send",
      "last error: connect ECONNREFUSED",
      `event ${failedToQueue}`,
      "status: Failed To Queue",
      `last error: ${NOT_QUEUED_ERROR}`,
      `cron run ${run.id} (cron job ${run.cronJobId})`,
      "https://cron.example/hook",
      "last error: Timeout after 10000 ms",
      `scheduled: ${new Date(settled(50 * MINUTE).getTime() - 20_000).toISOString()}`,
    ]) {
      expect(text).toContain(expected);
    }
    // Oldest first.
    expect(text.indexOf(failedToSend)).toBeLessThan(text.indexOf(failedToQueue));
    expect(text.indexOf(failedToQueue)).toBeLessThan(text.indexOf(run.id));
    for (const absent of [sent, cancelled, sentRun.id, betaFailure, "HTTP 503"]) expect(text).not.toContain(absent);
    expect(toBeta?.subject).toBe("Punctual: 1 failed delivery in Beta");
    expect(toBeta?.text).toContain(betaFailure);

    // The mark is the newest failure the e-mail covered.
    expect(await markOf(alpha)).toEqual(settled(35 * MINUTE));
    expect(await markOf(beta)).toEqual(settled());
    expect(await markOf(quiet)).toBeNull();

    // Nothing new: nothing sent.
    smtp.mails.length = 0;
    clock.advance(HOUR);
    expect(await notices()()).toEqual({ sent: 0, failed: 0 });
    expect(smtp.mails).toEqual([]);

    // A new failure: a new e-mail with only it.
    const later = await insertEvent(alpha, "Failed To Send", { failedAt: settled(), errors: ["HTTP 404"] });
    clock.advance(HOUR);
    expect(await notices()()).toEqual({ sent: 1, failed: 0 });
    const [again] = await mailsTo(alpha);
    expect(again?.subject).toBe("Punctual: 1 failed delivery in Alpha");
    expect(again?.text).toContain(later);
    for (const old of [failedToSend, failedToQueue, run.id]) expect(again?.text).not.toContain(old);
  });

  it("names no header value of a failed delivery's policy", async () => {
    const org = await createTestOrganization(context, "Policy");
    const id = await insertEvent(org, "Failed To Send", { failedAt: settled(), errors: ["Receiver answered 401"] });
    await context.db.$executeRaw`UPDATE events SET delivery_policy = ${JSON.stringify({
      method: "PUT",
      headers: { Authorization: "Bearer s3cret-token-123", "X-Api-Key": "k3y-789" },
    })}::jsonb WHERE id = ${id}`;
    expect(await notices()()).toMatchObject({ failed: 0 });
    const [mail] = await mailsTo(org);
    expect(mail?.text).toContain(id);
    expect(mail?.text).not.toContain("s3cret-token-123");
    expect(mail?.text).not.toContain("k3y-789");
  });

  it("waits for a failure to settle before announcing it", async () => {
    const org = await createTestOrganization(context, "Settling");
    const fresh = await insertEvent(org, "Failed To Send", { failedAt: settled(settleMs(context.config) - 1_000) });
    expect(await notices()()).toEqual({ sent: 0, failed: 0 });
    clock.advance(2_000);
    expect(await notices()()).toEqual({ sent: 1, failed: 0 });
    expect((await mailsTo(org))[0]?.text).toContain(fresh);
  });

  it("keeps the mark when the SMTP server refuses, and sends the same failures next time", async () => {
    const org = await createTestOrganization(context, "Unlucky");
    const first = await insertEvent(org, "Failed To Send", { failedAt: settled(), errors: ["HTTP 500"] });

    smtp.failing = true;
    expect(await notices()()).toEqual({ sent: 0, failed: 1 });
    expect(await markOf(org)).toBeNull();

    const second = await insertCronRun(org, "Failed To Send", settled(20 * MINUTE), "HTTP 429");
    smtp.failing = false;
    expect(await notices()()).toEqual({ sent: 1, failed: 0 });
    const [mail] = await mailsTo(org);
    expect(mail?.text).toContain(first);
    expect(mail?.text).toContain(second.id);
    expect(await markOf(org)).toEqual(settled(20 * MINUTE));
  });

  it("keeps the mark when no SMTP server answers at all", async () => {
    const org = await createTestOrganization(context, "Offline");
    await insertEvent(org, "Failed To Queue", { failedAt: settled() });
    const unreachable = createMailer("smtp://127.0.0.1:1");
    try {
      const run = createFailureNotices({
        db: context.db,
        clock,
        config: context.config,
        mailer: unreachable,
        logger: context.logger,
      });
      const report = await run();
      expect(report.failed).toBeGreaterThanOrEqual(1);
      expect(await markOf(org)).toBeNull();
    } finally {
      unreachable.close();
    }
    // The reachable server gets it afterwards.
    await notices()();
    expect(await mailsTo(org)).toHaveLength(1);
  });

  it(`lists at most ${MAX_LISTED_FAILURES} failures and counts the rest`, async () => {
    const org = await createTestOrganization(context, "Busy");
    const total = MAX_LISTED_FAILURES + 5;
    await context.db.$executeRaw`
      INSERT INTO events (id, org_id, destination, payload, scheduled_time, status, failed_at, created_at, updated_at)
      SELECT 'evt_many_' || lpad(n::text, 4, '0'), ${org.orgId}, 'https://receiver.example/many', 'p',
             ${settled(2 * HOUR)}::timestamptz, 'Failed To Queue', ${settled(HOUR)}::timestamptz + n * interval '1 second',
             ${settled(2 * HOUR)}::timestamptz, ${settled(2 * HOUR)}::timestamptz
      FROM generate_series(1, ${total}::int) n`;

    expect(await notices()()).toEqual({ sent: 1, failed: 0 });
    const [mail] = await mailsTo(org);
    expect(mail?.subject).toBe(`Punctual: ${total} failed deliveries in Busy`);
    expect(mail?.text.match(/^- event /gm)).toHaveLength(MAX_LISTED_FAILURES);
    expect(mail?.text).toContain("evt_many_0001");
    expect(mail?.text).not.toContain(`evt_many_0${MAX_LISTED_FAILURES + 1}`);
    expect(mail?.text).toContain("and 5 more not listed here");
    // The counted ones are covered too: the mark is past all of them.
    expect(await markOf(org)).toEqual(new Date(settled(HOUR).getTime() + total * 1_000));
  });
});

describe("failure notices configuration", () => {
  it("takes smtp:// and smtps:// URLs and nothing else, and is off by default", () => {
    expect(loadConfig({}).SMTP_URL).toBeUndefined();
    expect(loadConfig({}).NOTIFY_FROM).toBe("Punctual <punctual@localhost>");
    expect(loadConfig({ SMTP_URL: "smtps://user:secret@mail.example.com:465" }).SMTP_URL).toBe(
      "smtps://user:secret@mail.example.com:465",
    );
    expect(loadConfig({ SMTP_URL: "smtp://mailpit:1025" }).SMTP_URL).toBe("smtp://mailpit:1025");
    for (const bad of ["http://mail.example.com", "mail.example.com:25"]) {
      expect(() => loadConfig({ SMTP_URL: bad })).toThrow(ConfigError);
    }
    // The URL may hold a password: the error names the variable, not the value.
    expect(() => loadConfig({ SMTP_URL: "http://user:secret@x" })).toThrow(/SMTP_URL/);
    expect(() => loadConfig({ SMTP_URL: "http://user:secret@x" })).not.toThrow(/secret/);
    expect(() => loadConfig({ FAILURE_NOTICE_INTERVAL_MS: "0" })).toThrow(/FAILURE_NOTICE_INTERVAL_MS/);
    expect(() => loadConfig({ RETENTION_BATCH_SIZE: "-5" })).toThrow(/RETENTION_BATCH_SIZE/);
  });
});

describe("failure notices task", () => {
  async function schedulerIds(config: TestContext["config"]): Promise<string[]> {
    const queue = new Queue(QUEUE_NAMES.maintenance, { connection: context.redis, prefix: config.QUEUE_PREFIX });
    try {
      return (await queue.getJobSchedulers(0, -1)).map((scheduler) => scheduler.id ?? scheduler.key).sort();
    } finally {
      await queue.close();
    }
  }

  it("is not scheduled without SMTP_URL, and sends on its schedule with it", async () => {
    const deps = { db: context.db, redis: context.redis, clock: systemClock, logger: context.logger };
    const without = createMaintenance({ ...deps, config: { ...context.config, SMTP_URL: undefined } });
    await without.start();
    await without.stop();
    expect(await schedulerIds(context.config)).toEqual([MAINTENANCE_JOBS.reconcile, MAINTENANCE_JOBS.retention].sort());

    const org = await createTestOrganization(context, "Scheduled");
    // Created two hours ago: failures before an organization existed are not looked for.
    await context.db.organization.update({
      where: { id: org.orgId },
      data: { createdAt: new Date(Date.now() - 2 * HOUR) },
    });
    const failure = await insertEvent(org, "Failed To Send", {
      failedAt: new Date(Date.now() - HOUR),
      errors: ["HTTP 500"],
    });
    // A short interval, so that the test sees several runs.
    const withSmtp = createMaintenance({
      ...deps,
      config: { ...context.config, SMTP_URL: smtp.url, FAILURE_NOTICE_INTERVAL_MS: 200 },
    });
    const queue = new Queue(QUEUE_NAMES.maintenance, {
      connection: context.redis,
      prefix: context.config.QUEUE_PREFIX,
    });
    const finishedRuns = async () =>
      (await queue.getJobs(["completed"])).filter((job) => job.name === MAINTENANCE_JOBS.failureNotices).length;
    await withSmtp.start();
    try {
      expect(await schedulerIds(context.config)).toContain(MAINTENANCE_JOBS.failureNotices);
      await expect.poll(async () => (await mailsTo(org)).length).toBe(1);
      expect((await mailsTo(org))[0]?.text).toContain(failure);
      // Later runs find nothing new for it.
      const runs = await finishedRuns();
      await expect.poll(finishedRuns).toBeGreaterThanOrEqual(runs + 3);
      expect(await mailsTo(org)).toHaveLength(1);
    } finally {
      await withSmtp.stop();
      await queue.close();
    }
  });
});
