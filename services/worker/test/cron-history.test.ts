import { createCronJob, cronSchedulerId, KEEP_FINISHED_JOBS, scheduleOf } from "@punctual/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  PER_SECOND_CRON_SETTINGS,
} from "../../../test/support/context.ts";
import { type Receiver, startReceiver } from "../../../test/support/receiver.ts";
import { createWorker } from "../src/worker.ts";

// What a cron job that fires every second leaves behind: its history in Postgres is cut to
// CRON_RUNS_KEPT_PER_JOB, and BullMQ keeps a bounded number of finished jobs in Redis. No bound in
// milliseconds here, so the file runs beside others (cron-schedules.test.ts holds the timed cases).

let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver.close();
});

it("a job firing every second keeps a bounded history in Postgres and one finished job per firing in Redis", async () => {
  // The history kept per job is short here.
  const own = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    CRON_RUNS_KEPT_PER_JOB: "5",
    ...PER_SECOND_CRON_SETTINGS,
  });
  const ownOrg = await createTestOrganization(own);
  const ownWorker = createWorker({ ...createTestApiDeps(own).deps });
  try {
    await ownWorker.start();
    const job = await createCronJob(
      own.db,
      {
        orgId: ownOrg.orgId,
        expression: null,
        every: { text: "PT1S", ms: 1_000 },
        timezone: "UTC",
        destination: receiver.url.replace("/hook", "/cheap"),
        payload: "cheap",
      },
      new Date(),
      100,
    );
    const { deps, cronQueue } = createTestApiDeps(own);
    await deps.cronJobSchedulers.schedule(job.id, scheduleOf(job));
    const runCount = async () => (await own.db.cronJob.findUniqueOrThrow({ where: { id: job.id } })).runCount;
    await expect.poll(runCount, { timeout: 20_000 }).toBeGreaterThanOrEqual(12);
    // Postgres: the newest runs only (one being made besides them at most).
    expect(await own.db.cronRun.count({ where: { cronJobId: job.id } })).toBeLessThanOrEqual(6);
    // Redis: besides the queue's own keys, the scheduler and its pending firing, one finished job per
    // firing, which BullMQ keeps up to KEEP_FINISHED_JOBS (then drops the oldest).
    const prefix = `${own.config.QUEUE_PREFIX}:cron:`;
    const keys: string[] = [];
    let cursor = "0";
    do {
      const [next, found] = await own.redis.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
      keys.push(...found);
      cursor = next;
    } while (cursor !== "0");
    const completed = await own.redis.zrange(`${prefix}completed`, 0, -1);
    const jobKeys = keys.filter((key) => key.startsWith(`${prefix}repeat:cron-`) && /:\d+$/.test(key));
    expect(jobKeys.length).toBeLessThanOrEqual(completed.length + 2);
    expect(completed.length).toBeLessThanOrEqual(KEEP_FINISHED_JOBS.removeOnComplete.count);
    const otherKeys = keys.filter((key) => !jobKeys.includes(key));
    expect(otherKeys.length).toBeLessThan(20);
    await cronQueue.removeJobScheduler(cronSchedulerId(job.id));
  } finally {
    await ownWorker.stop();
    await own.close();
  }
});
