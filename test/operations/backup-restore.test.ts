import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, truncate } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type Config,
  CRON_QUEUE_SETTINGS,
  createRedis,
  cronSchedulerId,
  QUEUE_NAMES,
  type Redis,
} from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { withClient } from "@punctual/db/testing";
import { Queue } from "bullmq";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTestOrganization, deleteKeys, testConfig, testRedisUrl } from "../support/context.ts";
import { type BlockRun, runBlock, shellBlocks, subsection } from "../support/doc-blocks.ts";
import { type OwnPostgres, startOwnPostgres } from "../support/own-servers.ts";
import {
  freePort,
  repositoryRoot,
  type ServiceProcess,
  startService,
  startWorkerProcess,
  waitForService,
} from "../support/processes.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";

// docs/backups.md, drilled: a running deployment (API and worker processes) with sent, queued and
// pending events is backed up with the guide's commands, then lost: its processes are killed, its
// admin token file is gone and its database is damaged. It is restored with the guide's commands on
// a fresh database and an empty Redis prefix, started again, and a loopback receiver counts, by
// webhook-id, what the restored deployment sends. Every ```sh block of the guide's plain-host parts is
// run as written, in a bash with only the guide's variables set.
//
// The database server is one of the test's own (test/support/own-servers.ts), so that the guide's
// database name, `punctual`, is used as written without touching the shared server's databases.
// Settings that differ from the defaults: a short enqueue horizon (20 s instead of an hour) with the
// shorter prepare window and reconciler interval it needs, so that some Pending events are beyond it
// (in Postgres only) and still due within the test; and for the old worker only, retries and a
// delivery timeout of ten minutes, so that an event waits for its retry, and a request hangs, while
// the backup is taken.

const guide = await readFile(join(repositoryRoot, "docs/backups.md"), "utf8");
const backupBlocks = shellBlocks(subsection(guide, "Taking a backup", "On a plain host"));
const restoreBlocks = shellBlocks(subsection(guide, "Restoring", "On a plain host"));

const SETTINGS = {
  ALLOW_PRIVATE_DESTINATIONS: "true",
  LOG_LEVEL: "warn",
  RATE_LIMIT_PER_MINUTE: "10000",
  PREPARE_AHEAD_MS: "5000",
  RECONCILE_INTERVAL_MS: "1000",
  ENQUEUE_HORIZON_MS: "20000",
  // The warm-up is for lateness, which this test does not judge.
  WORKER_WARMUP_REQUESTS: "0",
};
const OLD_WORKER_SETTINGS = { RETRY_DELAYS_MS: "600000,600000,600000", DELIVERY_TIMEOUT_MS: "600000" };

let postgres: OwnPostgres;
let work: string;
let receiver: Receiver;
/**
 * Where the requests left unanswered go: an origin of its own, since an origin that stops answering
 * gets no more requests than it has in flight (the dispatcher's destination health).
 */
let hangingReceiver: Receiver;
let redis: Redis;
let config: Config;
let db: Db | undefined;
/** The guide's variables, as an operator would set them. */
let vars: Record<string, string>;
const running: ServiceProcess[] = [];
/** Until the restore, requests to `hangingReceiver` are left unanswered: they are on the wire at the backup. */
let hanging = true;

beforeAll(async () => {
  postgres = await startOwnPostgres();
  work = await mkdtemp(join(tmpdir(), "punctual-backup-"));
  const queuePrefix = `test-${randomBytes(6).toString("hex")}`;
  vars = {
    DATABASE_URL: postgres.url("punctual"),
    POSTGRES_URL: postgres.url("postgres"),
    REDIS_URL: testRedisUrl(),
    QUEUE_PREFIX: queuePrefix,
    BACKUP_DIR: join(work, "backups", "2026-11-30T0200Z"),
    ADMIN_TOKEN_FILE: join(work, "state", "admin-token"),
    // A developer's .env in the checkout must not reach `pnpm db:migrate`.
    PUNCTUAL_ENV_FILE: "none",
  };
  config = testConfig({ DATABASE_URL: vars.DATABASE_URL as string, QUEUE_PREFIX: queuePrefix });
  redis = createRedis(config);
  receiver = await startReceiver({
    status: (_n, req) =>
      req.path === "/fail-first" && receiver.deliveriesOf(String(req.headers["webhook-id"])).length === 1 ? 500 : 200,
  });
  hangingReceiver = await startReceiver({ hang: () => hanging });
  // The deployment's first install, as the quick start makes it: the database created and migrated.
  const migrated = await runBlock("pnpm db:migrate", repositoryRoot, vars);
  expect(migrated.code, migrated.output).toBe(0);
  db = createDb(vars.DATABASE_URL as string, { poolSize: 5 });
}, 120_000);

afterAll(async () => {
  await Promise.all(running.map((service) => service.stop("SIGKILL")));
  await receiver?.close();
  await hangingReceiver?.close();
  await db?.$disconnect();
  if (redis) {
    await deleteKeys(redis, `${config.QUEUE_PREFIX}*`);
    await redis.quit();
  }
  await postgres?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

/** The API and a worker as processes, on the deployment's settings; the API at `url`. */
async function startDeployment(workerSettings: Record<string, string> = {}): Promise<{ url: string }> {
  const port = await freePort();
  const env = {
    DATABASE_URL: vars.DATABASE_URL as string,
    REDIS_URL: vars.REDIS_URL as string,
    QUEUE_PREFIX: vars.QUEUE_PREFIX as string,
    ADMIN_TOKEN_FILE: vars.ADMIN_TOKEN_FILE as string,
    ...SETTINGS,
  };
  const api = startService("api", { ...env, PORT: String(port), HOST: "127.0.0.1" });
  running.push(api);
  // Both waited for, so that a worker that started is stopped at the end even when the API did not.
  const [worker, apiUp] = await Promise.allSettled([
    startWorkerProcess(env, { ...env, ...workerSettings }),
    waitForService(api, `http://127.0.0.1:${port}/healthz`),
  ]);
  if (worker.status === "fulfilled") running.push(worker.value.worker);
  else throw worker.reason;
  if (apiUp.status === "rejected") throw apiUp.reason;
  return { url: `http://127.0.0.1:${port}` };
}

function expectSuccess(run: BlockRun, block: string): BlockRun {
  expect(run.code, `${block}\n${run.output}`).toBe(0);
  return run;
}

/** Events' statuses by id, read from the deployment's database. */
async function statuses(ids: string[]): Promise<Map<string, string>> {
  const rows = await (db as Db).event.findMany({ where: { id: { in: ids } }, select: { id: true, status: true } });
  return new Map(rows.map((row) => [row.id, row.status]));
}

it("a backup restored on a fresh database and an empty Redis delivers every pending event once and sends nothing sent again", async () => {
  // The guide's blocks, each recognised by its command: a block added to the guide fails here until
  // the test runs it.
  const backupRoles = ["pg_dump --format=custom", "pg_restore --file=/dev/null"];
  expect(backupBlocks).toHaveLength(backupRoles.length);
  for (const [n, role] of backupRoles.entries()) expect(backupBlocks[n], `backup block ${n + 1}`).toContain(role);
  const restoreRoles = [
    "ALTER DATABASE",
    "createdb",
    "redis-cli",
    "pnpm db:migrate",
    "GROUP BY status",
    "install -D",
    "service-health",
  ];
  expect(restoreBlocks).toHaveLength(restoreRoles.length);
  for (const [n, role] of restoreRoles.entries()) expect(restoreBlocks[n], `restore block ${n + 1}`).toContain(role);
  const [rename, restore, emptyRedis, migrate, countByStatus, tokenBack, serviceHealth] = restoreBlocks as string[];

  // --- The deployment, running ---
  const started = Date.now();
  /** Seconds from the test's start to each phase's end, for the report. */
  const phases: Record<string, number> = {};
  const phase = (name: string) => {
    phases[name] = Math.round((Date.now() - started) / 100) / 10;
  };
  const before = await startDeployment(OLD_WORKER_SETTINGS);
  phase("deployment up");
  const org = await createTestOrganization({ db: db as Db, config });
  const hook = receiver.url;
  async function call(method: string, path: string, body?: unknown): Promise<{ id: string }> {
    const response = await fetch(`${before.url}${path}`, {
      method,
      headers: { "x-api-key": org.apiKey, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    return JSON.parse(text) as { id: string };
  }
  const createEvents = async (count: number, destination: string, inMs: number) => {
    const scheduledTime = new Date(Date.now() + inMs).toISOString();
    const created = await Promise.all(
      Array.from({ length: count }, (_, n) =>
        call("POST", "/api/events", { payload: JSON.stringify({ n }), destination, scheduledTime }),
      ),
    );
    return created.map((event) => event.id);
  };

  const sent = await createEvents(10, hook, 3_000);
  const onTheWire = await createEvents(5, hangingReceiver.url, 3_000);
  const retrying = await createEvents(5, hook.replace(/\/hook$/, "/fail-first"), 3_000);
  const cancelled = await createEvents(3, hook, 3_600_000);
  for (const id of cancelled) await call("PUT", `/api/events/${id}`, { status: "Cancelled" });
  const cron = await call("POST", "/api/cronjobs", { payload: "{}", destination: hook, expression: "0 0 1 1 *" });

  await expect.poll(async () => [...(await statuses(sent)).values()].filter((s) => s === "Sent").length).toBe(10);
  await expect.poll(() => onTheWire.filter((id) => hangingReceiver.deliveriesOf(id).length === 1).length).toBe(5);
  await expect
    .poll(() => (db as Db).eventAttempt.count({ where: { eventId: { in: retrying }, responseStatus: 500 } }))
    .toBe(5);
  expect(new Set((await statuses([...onTheWire, ...retrying])).values())).toEqual(new Set(["Queued"]));

  // Pending at the backup: soon enough to be delivered after it, before the deployment is lost
  // (8 s); within the enqueue horizon, with a job in Redis (18 s); beyond it, in Postgres only (28 s).
  const sentAfterBackup = await createEvents(10, hook, 8_000);
  const pendingNear = await createEvents(10, hook, 18_000);
  const pendingFar = await createEvents(10, hook, 28_000);

  phase("events sent, on the wire, retrying");
  // --- The backup (the guide's two blocks) ---
  vars.ADMIN_TOKEN = (await readFile(vars.ADMIN_TOKEN_FILE as string, "utf8")).trim();
  const [dump, check] = backupBlocks as string[];
  expectSuccess(await runBlock(dump as string, work, vars), dump as string);
  expectSuccess(await runBlock(check as string, work, vars), check as string);
  const backupDir = vars.BACKUP_DIR as string;
  expect((await stat(backupDir)).mode & 0o777).toBe(0o700);
  expect((await stat(join(backupDir, "punctual.dump"))).mode & 0o777).toBe(0o600);
  expect((await stat(join(backupDir, "admin-token"))).mode & 0o777).toBe(0o600);
  phase("backup taken");
  // The check fails on a dump cut short (a copy that stopped half-way).
  const cut = join(work, "cut");
  await mkdir(cut);
  await copyFile(join(backupDir, "punctual.dump"), join(cut, "punctual.dump"));
  await truncate(join(cut, "punctual.dump"), Math.floor((await stat(join(backupDir, "punctual.dump"))).size / 2));
  expect((await runBlock(check as string, work, { ...vars, BACKUP_DIR: cut })).code).not.toBe(0);

  // The deployment goes on after the backup: these are sent, and only the backup says otherwise.
  await expect
    .poll(async () => [...(await statuses(sentAfterBackup)).values()].filter((s) => s === "Sent").length, {
      timeout: 30_000,
    })
    .toBe(10);
  expect(new Set((await statuses([...pendingNear, ...pendingFar])).values())).toEqual(new Set(["Pending"]));

  // --- Lost: the processes die with their machine, the token file with its disk; a mistaken
  // statement deleted the Pending events from the database ---
  await Promise.all(running.splice(0).map((service) => service.stop("SIGKILL")));
  await rm(vars.ADMIN_TOKEN_FILE as string);
  await (db as Db).$executeRaw`DELETE FROM events WHERE status = 'Pending'`;
  await (db as Db).$disconnect();
  db = undefined;
  const jobsBefore = await redis.keys(`${config.QUEUE_PREFIX}:*`);
  expect(jobsBefore.length).toBeGreaterThan(0);
  // Every request arriving from here on comes from the restored deployment.
  const lostAt = Date.now();
  // The killed processes' sessions end as Postgres sees their sockets close.
  await expect
    .poll(() =>
      withClient(vars.POSTGRES_URL as string, async (client) =>
        Number((await client.query("SELECT count(*) FROM pg_stat_activity WHERE datname = 'punctual'")).rows[0].count),
      ),
    )
    .toBe(0);

  phase("deployment lost");
  // --- The restore (the guide's steps 2 to 7) ---
  phase("sessions ended");
  expectSuccess(await runBlock(rename as string, work, vars), rename as string);
  expectSuccess(await runBlock(restore as string, work, vars), restore as string);
  phase("database restored");
  expectSuccess(await runBlock(emptyRedis as string, work, vars), emptyRedis as string);
  expect(await redis.keys(`${config.QUEUE_PREFIX}*`)).toEqual([]);
  const migrated = expectSuccess(await runBlock(migrate as string, repositoryRoot, vars), migrate as string);
  expect(migrated.output).toContain("No pending migrations to apply");
  phase("migrated");
  const counted = expectSuccess(await runBlock(countByStatus as string, work, vars), countByStatus as string);
  const byStatus = Object.fromEntries(
    [...counted.output.matchAll(/^\s*([A-Za-z][A-Za-z ]*?)\s*\|\s*(\d+)\s*$/gm)].map((m) => [m[1], Number(m[2])]),
  );
  expect(byStatus).toEqual({ Cancelled: 3, Pending: 30, Queued: 10, Sent: 10 });
  expectSuccess(await runBlock(tokenBack as string, work, vars), tokenBack as string);
  expect((await readFile(vars.ADMIN_TOKEN_FILE as string, "utf8")).trim()).toBe(vars.ADMIN_TOKEN);
  expect((await stat(vars.ADMIN_TOKEN_FILE as string)).mode & 0o777).toBe(0o600);
  // The damaged database was set aside, not dropped.
  const damagedUrl = postgres.url("punctual_damaged");
  expect(
    await withClient(damagedUrl, async (client) =>
      Number((await client.query("SELECT count(*) FROM events")).rows[0].count),
    ),
  ).toBe(33);

  phase("restored");
  // --- The restored deployment (step 8) ---
  hanging = false;
  db = createDb(vars.DATABASE_URL as string, { poolSize: 5 });
  const after = await startDeployment();
  phase("restored deployment up");
  vars.API_URL = after.url;
  const final = { sent, onTheWire, retrying, sentAfterBackup, pendingNear, pendingFar };
  const mustBeSent = Object.values(final).flat();
  await expect
    .poll(async () => [...(await statuses(mustBeSent)).values()].filter((s) => s === "Sent").length, {
      timeout: 120_000,
      interval: 250,
    })
    .toBe(mustBeSent.length);
  expect(new Set((await statuses(cancelled)).values())).toEqual(new Set(["Cancelled"]));
  phase("all sent");

  // The service health answers with the restored admin token, shows the new worker and a run of
  // the reconciler.
  await expect
    .poll(async () => {
      const run = await runBlock(serviceHealth as string, work, vars);
      if (run.code !== 0) return run.output;
      const health = JSON.parse(run.output) as { workers: unknown[]; reconciler: { lastRunAt: string | null } };
      return { workers: health.workers.length, reconcilerRan: health.reconciler.lastRunAt !== null };
    })
    .toEqual({ workers: 1, reconcilerRan: true });
  // The cron job's scheduler is back in the empty Redis.
  const cronQueue = new Queue(QUEUE_NAMES.cron, {
    connection: redis,
    prefix: config.QUEUE_PREFIX,
    settings: CRON_QUEUE_SETTINGS,
  });
  try {
    await expect
      .poll(async () => (await cronQueue.getJobScheduler(cronSchedulerId(cron.id)))?.pattern)
      .toBe("lead 1000 0 0 1 1 *");
  } finally {
    await cronQueue.close();
  }

  // What the receiver got from the restored deployment, by webhook-id.
  const all = [...receiver.deliveries, ...hangingReceiver.deliveries];
  const afterRestore = all.filter((delivery) => delivery.at > lostAt);
  const count = (ids: string[], deliveries = all) =>
    ids.map((id) => deliveries.filter((delivery) => delivery.headers["webhook-id"] === id).length);
  const report = Object.fromEntries(
    Object.entries({ ...final, cancelled }).map(([group, ids]) => [
      group,
      { total: count(ids), afterRestore: count(ids, afterRestore) },
    ]),
  );
  console.info(`[backup-restore] seconds: ${JSON.stringify(phases)}; deliveries per event: ${JSON.stringify(report)}`);
  const times = (n: number, length: number) => Array.from({ length }, () => n);
  expect(report).toEqual({
    // Sent at the backup: nothing again.
    sent: { total: times(1, 10), afterRestore: times(0, 10) },
    // Queued with its request on the wire at the backup: that request arrives again, same webhook-id.
    onTheWire: { total: times(2, 5), afterRestore: times(1, 5) },
    // Queued, its retry waiting: the retry, once.
    retrying: { total: times(2, 5), afterRestore: times(1, 5) },
    // Pending at the backup and sent after it: sent again, same webhook-id.
    sentAfterBackup: { total: times(2, 10), afterRestore: times(1, 10) },
    // Pending at the backup: once.
    pendingNear: { total: times(1, 10), afterRestore: times(1, 10) },
    pendingFar: { total: times(1, 10), afterRestore: times(1, 10) },
    cancelled: { total: times(0, 3), afterRestore: times(0, 3) },
  });
  // The retried events' history goes on from the backup's: attempt 1 answered 500, attempt 2 200.
  const attempts = await (db as Db).eventAttempt.findMany({
    where: { eventId: { in: retrying } },
    orderBy: [{ eventId: "asc" }, { attempt: "asc" }],
    select: { attempt: true, responseStatus: true },
  });
  expect(attempts.map((a) => [a.attempt, a.responseStatus])).toEqual(
    retrying.flatMap(() => [
      [1, 500],
      [2, 200],
    ]),
  );
}, 240_000);
