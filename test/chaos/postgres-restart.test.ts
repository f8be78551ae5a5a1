import { createDb } from "@punctual/db";
import { migrateDatabase } from "@punctual/db/testing";
import pg from "pg";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createWorker, type DeliveryWorker } from "../../services/worker/src/worker.ts";
import { createTestApiDeps, createTestContext, createTestOrganization, type TestContext } from "../support/context.ts";
import { scheduleBurst } from "../support/events.ts";
import { type OwnPostgres, startOwnPostgres } from "../support/own-servers.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import { countDeliveries } from "./chaos-report.ts";

// Chaos 4: Postgres restarts in the middle of a burst. Claims and records fail while it is away;
// the jobs retry, and no event is left Queued: every one ends final. None is lost. Some may be
// delivered twice, and only in one way: a request that left while its attempt could not be recorded
// (Postgres going or gone) is sent again once the event's job runs again and finds it still Queued —
// the at-least-once window of contract §5. So a repeated event was first delivered during the
// restart (from just before it began, when the last records were still on their way, until Postgres
// answered again), and is delivered at most twice (the repeat leaves with Postgres up and is
// recorded). The bound is therefore the deliveries that arrived in that window, not a fixed number:
// the worker keeps sending the events it claimed ahead (CLAIM_LEAD_MS) while Postgres is away, and
// the window (≈ 300 ms here) fell on 40 to 180 of the 300 deliveries in the runs measured.

let postgres: OwnPostgres;
let context: TestContext;
let receiver: Receiver;
let worker: DeliveryWorker;
let workerStopped = false;

beforeAll(async () => {
  postgres = await startOwnPostgres();
  const admin = new pg.Client({ connectionString: postgres.url("postgres") });
  await admin.connect();
  await admin.query("CREATE DATABASE punctual");
  await admin.end();
  await migrateDatabase(postgres.url("punctual"));
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", MAX_EVENTS_PER_MONTH: "100000" });
  // This file's records live on its own server; the shared test database is left unused.
  await context.db.$disconnect();
  context.db = createDb(postgres.url("punctual"), { poolSize: 10 });
  context.config = { ...context.config, DATABASE_URL: postgres.url("punctual") };
  receiver = await startReceiver({ mount: (app) => app.use((_req, _res, next) => setTimeout(next, 10)) });
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
}, 90_000);

afterAll(async () => {
  if (!workerStopped) await worker?.stop();
  await receiver?.close();
  await context?.db.$disconnect();
  await context?.close().catch(() => {});
  await postgres?.stop();
});

it("restarting Postgres mid-burst of 300 leaves no event Queued; all end Sent", async () => {
  const org = await createTestOrganization(context);
  const { eventQueue } = createTestApiDeps(context).deps;
  const due = new Date(Date.now() + 3_000);
  const events = await scheduleBurst(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: due,
    count: 300,
  });
  // Restart when the burst is under way.
  await expect.poll(() => receiver.deliveries.length, { timeout: 15_000, interval: 5 }).toBeGreaterThan(20);
  const restartAt = Date.now();
  await postgres.restart();
  // Postgres answers again from here on (pg_ctl waits for it).
  const backAt = Date.now();
  const deliveredAtRestart = receiver.deliveries.length;

  await expect
    .poll(
      async () =>
        context.db.event
          .count({ where: { orgId: org.orgId, status: { in: ["Pending", "Queued"] } } })
          .catch(() => Number.NaN),
      { timeout: 60_000, interval: 200 },
    )
    .toBe(0);
  const sent = await context.db.event.count({ where: { orgId: org.orgId, status: "Sent" } });
  // The worker drains before the deliveries are counted: nothing it still sends is missed.
  await worker.stop();
  workerStopped = true;
  const counts = countDeliveries(
    `postgres restart after ${deliveredAtRestart} of 300 deliveries`,
    receiver,
    events,
    sent,
  );
  expect(sent).toBe(300);
  expect(counts.lost).toBe(0);
  expect(counts.delivered).toBe(300);

  // The bound on repeats (see the top of the file): at most one per event, only for an event first
  // delivered in the restart's window, so never more than the deliveries that arrived in it. The
  // window opens 1 s before the restart began: far longer than a record's round trip (measured: the
  // earliest repeated delivery arrived 11 to 16 ms before it).
  const window = { from: restartAt - 1_000, to: backAt };
  const inWindow = (at: number) => at >= window.from && at <= window.to;
  const repeated = events.filter((event) => receiver.deliveriesOf(event.id).length > 1);
  expect(repeated.filter((event) => receiver.deliveriesOf(event.id).length > 2)).toEqual([]);
  const firstArrivals = repeated.map((event) => Math.min(...receiver.deliveriesOf(event.id).map((d) => d.at)));
  expect(firstArrivals.filter((at) => !inWindow(at))).toEqual([]);
  expect(counts.duplicated).toBe(repeated.length);
  const deliveredInWindow = receiver.deliveries.filter((delivery) => inWindow(delivery.at)).length;
  expect(counts.duplicated).toBeLessThanOrEqual(deliveredInWindow);
  // Every repeat was recorded: one attempt row per delivery that Postgres could take.
  const attempts = await context.db.eventAttempt.count({ where: { event: { orgId: org.orgId } } });
  expect(attempts).toBeGreaterThanOrEqual(300);
  expect(attempts).toBeLessThanOrEqual(receiver.deliveries.length);
}, 120_000);
