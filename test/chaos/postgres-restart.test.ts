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
// the jobs retry, and no event is left Queued: every one ends final.

let postgres: OwnPostgres;
let context: TestContext;
let receiver: Receiver;
let worker: DeliveryWorker;

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
  await worker?.stop();
  await receiver?.close();
  await context?.db.$disconnect();
  await context?.close().catch(() => {});
  await postgres?.stop();
});

it("restarting Postgres mid-burst of 300 leaves no event Queued; all end Sent", async () => {
  const org = await createTestOrganization(context);
  const { scheduler } = createTestApiDeps(context).deps;
  const due = new Date(Date.now() + 3_000);
  const events = await scheduleBurst(context, scheduler, {
    orgId: org.orgId,
    destination: receiver.url,
    scheduledTime: due,
    count: 300,
  });
  // Restart when the burst is under way.
  await expect.poll(() => receiver.deliveries.length, { timeout: 15_000, interval: 5 }).toBeGreaterThan(20);
  await postgres.restart();
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
  await new Promise((resolve) => setTimeout(resolve, 300));
  const counts = countDeliveries(
    `postgres restart after ${deliveredAtRestart} of 300 deliveries`,
    receiver,
    events,
    sent,
  );
  expect(sent).toBe(300);
  expect(counts.lost).toBe(0);
}, 120_000);
