import type { Response } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { preparedJobs } from "../../../test/support/prometheus.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// A feed holding WORKER_PREPARED_JOBS jobs takes more only once a tenth of that room is free, and
// then that block together (services/worker/src/events/event-job-feed.ts): the jobs of a burst
// larger than the room are read and claimed in batches, not one by one as deliveries end. The
// receiver here holds every request until the test answers it, so deliveries end one at a time.

const PREPARED_AT_MOST = 20;
/** A tenth of PREPARED_AT_MOST. */
const BLOCK = 2;

let context: TestContext;
let org: TestOrganization;
let worker: DeliveryWorker;
let receiver: Receiver;
/** Requests received and not answered yet, oldest first. */
const unanswered: Response[] = [];

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    WORKER_PREPARED_JOBS: String(PREPARED_AT_MOST),
    PREPARE_AHEAD_MS: "30000",
    CLAIM_LEAD_MS: "1000",
  });
  org = await createTestOrganization(context);
  receiver = await startReceiver({
    mount: (app) =>
      app.use((_req, res) => {
        unanswered.push(res);
      }),
  });
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
});

afterAll(async () => {
  for (const res of unanswered.splice(0)) res.status(200).end();
  await worker.stop();
  await receiver.close();
  await context.close();
});

/** The worker's `punctual_prepared_jobs` gauge. */
const heldJobs = () => preparedJobs(worker.healthPort);

function answer(count: number) {
  for (const res of unanswered.splice(0, count)) res.status(200).end();
}

describe("the event job feed at capacity", () => {
  it("takes jobs again only once a tenth of WORKER_PREPARED_JOBS is free, then that block together; each event is sent once", async () => {
    const queue = createTestApiDeps(context).queue;
    const scheduledTime = new Date(Date.now() + 3_000);
    const events: { id: string }[] = [];
    for (let i = 0; i < PREPARED_AT_MOST + BLOCK; i++) {
      events.push(
        await scheduleEvent(context, createTestApiDeps(context).deps.eventQueue, {
          orgId: org.orgId,
          destination: receiver.url,
          scheduledTime,
        }),
      );
    }
    await expect.poll(heldJobs).toBe(PREPARED_AT_MOST);
    expect(await queue.getWaitingCount()).toBe(BLOCK);
    await expect.poll(() => unanswered.length, { timeout: 8_000 }).toBe(PREPARED_AT_MOST);

    // One delivery ends: the gauge drops once the job is let go; one free place is not a block.
    answer(1);
    await expect.poll(heldJobs).toBe(PREPARED_AT_MOST - 1);
    expect(await queue.getWaitingCount()).toBe(BLOCK);

    // A second one ends: a block is free, and both waiting jobs are taken.
    answer(1);
    await expect.poll(() => queue.getWaitingCount()).toBe(0);
    await expect.poll(heldJobs).toBe(PREPARED_AT_MOST);

    await expect
      .poll(
        async () => {
          answer(unanswered.length);
          const statuses = await Promise.all(events.map((event) => statusOf(context, event.id)));
          return statuses.filter((status) => status === "Sent").length;
        },
        { timeout: 15_000 },
      )
      .toBe(events.length);
    for (const event of events) expect(receiver.deliveriesOf(event.id)).toHaveLength(1);
  });
});
