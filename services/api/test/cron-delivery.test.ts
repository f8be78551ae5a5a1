import { createCronJob, editCronJob, getCronJob, init, webhookHandler } from "@jiter/node";
import { CRON_LEAD_MS, type CronJobData, cronSchedulerId } from "@punctual/core";
import type { Queue } from "bullmq";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { startLiveApi } from "../../../test/support/live-api.ts";
import { type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { startTestWorker } from "../../../test/support/worker.ts";
import type { CronJobWithHistory } from "../src/cron-jobs/schemas.ts";

// End to end at a real minute boundary: a `* * * * *` job created through the API with the SDK,
// fired by BullMQ, delivered by a running worker to a receiver that verifies it with the SDK's own
// webhook handler, and shown in the job's history. The only test that waits for the clock (up to a
// minute); the worker's cron tests drive schedulers every second instead.

const MINUTE_MS = 60_000;

let context: TestContext;
let org: TestOrganization;
let receiver: Receiver;
let cronQueue: Queue<CronJobData>;
const verified: { payload: string; scheduledTime: Date }[] = [];

beforeAll(async () => {
  context = await createTestContext({ WORKER_HEALTH_PORT: "0" });
  org = await createTestOrganization(context);
  cronQueue = createTestApiDeps(context).cronQueue;
  const api = await startLiveApi(context);
  init({ apiKey: org.apiKey, signingSecret: org.signingSecret, baseUrl: `${api.baseUrl}/api` });

  // startReceiver parses JSON (express.json()) before the SDK's handler, as the SDK's README asks.
  receiver = await startTestReceiver(context, {
    mount: (app) =>
      app.post(
        "/verified",
        webhookHandler(({ payload, scheduledTime }) => {
          verified.push({ payload, scheduledTime });
        }),
      ),
  });
  await startTestWorker(context);
});

afterAll(() => context?.close());

it("fires at the minute boundary, verified by @jiter/node, and shows the run in its history", async () => {
  // Creating within a moment of a boundary could let the API and BullMQ see different "next
  // minutes"; start just after one instead. This waits for the clock, not for a result.
  const untilBoundary = MINUTE_MS - (Date.now() % MINUTE_MS);
  if (untilBoundary < 3_000) await new Promise((resolve) => setTimeout(resolve, untilBoundary + 50));

  const payload = JSON.stringify({ tick: "minute" });
  const job = await createCronJob({
    payload,
    destination: receiver.url.replace("/hook", "/verified"),
    expression: "* * * * *",
  });
  const boundary = job.nextExecutionDate as string;
  expect(new Date(boundary).getTime() % MINUTE_MS).toBe(0);
  // Its job is due a lead before the firing (schedule.ts).
  const next = (await cronQueue.getJobScheduler(cronSchedulerId(job.id)))?.next ?? 0;
  expect(new Date(next + CRON_LEAD_MS).toISOString()).toBe(boundary);

  await expect.poll(() => verified.length, { timeout: 70_000 }).toBeGreaterThanOrEqual(1);
  // No more firings while the rest is checked.
  await editCronJob({ id: job.id, status: "Disabled" as NonNullable<Parameters<typeof editCronJob>[0]["status"]> });

  const [delivery] = receiver.deliveries;
  const lateness = (delivery?.at ?? 0) - new Date(boundary).getTime();
  expect(lateness).toBeGreaterThanOrEqual(0);
  expect(lateness).toBeLessThan(1_000);
  expect(delivery?.rawBody).toBe(JSON.stringify({ payload, scheduledTime: boundary }));
  expect(verified[0]?.payload).toBe(payload);
  expect(verified[0]?.scheduledTime.toISOString()).toBe(boundary);

  // The worker records the attempt just after the receiver answers.
  const history = async () => ((await getCronJob({ id: job.id })) as CronJobWithHistory).history;
  await expect.poll(async () => (await history())[0]?.status).toBe("Sent");
  const [run] = await history();
  expect(run).toEqual({
    id: expect.stringMatching(/^run_[0-9a-z]{26}$/),
    cron: "* * * * *",
    scheduledFor: boundary,
    status: "Sent",
    attempts: 1,
    responseStatus: 200,
    responseData: "OK",
    requestData: payload,
    error: null,
    durationMs: expect.any(Number),
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });
  // The delivery's webhook-id is the run's id, stable across retries.
  expect(receiver.deliveriesOf(run?.id as string)).toHaveLength(1);
}, 90_000);
