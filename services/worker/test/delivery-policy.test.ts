import { createHmac } from "node:crypto";
import { init, signatureIsValid } from "@jiter/node";
import {
  buildDeliveryRequest,
  CRON_RUN_JOB,
  createCronJob,
  createEvent,
  type DeliveryPolicy,
  type EventRecord,
} from "@punctual/core";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { statusOf } from "../../../test/support/events.ts";
import { type Delivery, type Receiver, type ReceiverOptions, startReceiver } from "../../../test/support/receiver.ts";
import { createWorker, type DeliveryWorker } from "../src/worker.ts";

// Each field of a delivery policy (contract §10.1) end to end: an event stored with the policy, a
// real worker, a real receiver on loopback. The policy is written into the event's row as the API
// stores it (services/api/test covers what the API accepts and answers).

/** Retries later than this go back to the queue with the claim released (event-transitions.ts). */
const PREPARE_AHEAD_MS = 2_000;

let context: TestContext;
let worker: DeliveryWorker;
let org: TestOrganization;
const receivers: Receiver[] = [];

beforeAll(async () => {
  context = await createTestContext({ WORKER_HEALTH_PORT: "0", PREPARE_AHEAD_MS: String(PREPARE_AHEAD_MS) });
  org = await createTestOrganization(context);
  worker = createWorker({ ...createTestApiDeps(context).deps });
  await worker.start();
});

afterAll(async () => {
  await worker?.stop();
  await Promise.all(receivers.map((receiver) => receiver.close()));
  await context.close();
});

async function receiver(options: ReceiverOptions = {}): Promise<Receiver> {
  const started = await startReceiver(options);
  receivers.push(started);
  return started;
}

/** An event of the file's organization with `policy` stored, due in `inMs`, queued. */
async function scheduleWithPolicy(
  to: Receiver,
  policy: DeliveryPolicy | null,
  input: { payload?: string; inMs?: number } = {},
): Promise<EventRecord> {
  const { eventQueue } = createTestApiDeps(context).deps;
  const { event } = await createEvent(
    context.db,
    {
      orgId: org.orgId,
      destination: to.url,
      payload: input.payload ?? JSON.stringify({ hello: "world" }),
      scheduledTime: new Date(Date.now() + (input.inMs ?? 300)),
    },
    new Date(),
    context.config.MAX_EVENTS_PER_MONTH,
  );
  if (policy !== null) {
    await context.db
      .$executeRaw`UPDATE events SET delivery_policy = ${JSON.stringify(policy)}::jsonb WHERE id = ${event.id}`;
  }
  await eventQueue.schedule(event);
  return event;
}

/** Standard Webhooks' signature of `body` as the delivery's headers claim it, recomputed. */
function standardSignatureMatches(delivery: Delivery, body: string): boolean {
  const expected = new Webhook(org.signingSecret).sign(
    String(delivery.headers["webhook-id"]),
    new Date(Number(delivery.headers["webhook-timestamp"]) * 1000),
    body,
  );
  return String(delivery.headers["webhook-signature"]).split(" ").includes(expected);
}

/** The Jiter signature of `body` as @jiter/node 0.4.0 computes it. */
function jiterSignatureMatches(delivery: Delivery, body: string): boolean {
  const mac = createHmac("sha256", Buffer.from(org.signingSecret, "utf8"))
    .update(`${delivery.headers["x-jiter-request-timestamp"]}:${body}`, "utf8")
    .digest("base64");
  return delivery.headers["x-jiter-signature"] === mac;
}

const gapsOf = (deliveries: Delivery[]) => deliveries.slice(1).map((d, n) => d.at - (deliveries[n] as Delivery).at);

describe("without a policy", () => {
  it("sends byte for byte what a delivery sent before policies existed: a POST of the envelope, signed, with no other header", async () => {
    const to = await receiver();
    const event = await scheduleWithPolicy(to, null, { payload: '{"n":1}' });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const [delivery] = to.deliveriesOf(event.id);
    if (!delivery) throw new Error("no delivery");
    expect(delivery.method).toBe("POST");
    expect(delivery.rawBody).toBe(
      JSON.stringify({ payload: '{"n":1}', scheduledTime: event.scheduledTime.toISOString() }),
    );
    // Exactly the headers of buildDeliveryRequest without a policy, plus what HTTP adds.
    const expected = buildDeliveryRequest({
      webhookId: event.id,
      payload: event.payload,
      scheduledTime: event.scheduledTime,
      signingSecret: org.signingSecret,
      now: new Date(Number(delivery.headers["x-jiter-request-timestamp"])),
    });
    expect(expected.method).toBe("POST");
    expect(expected.body).toBe(delivery.rawBody);
    const sent = Object.keys(delivery.headers).filter(
      (name) => !["host", "content-length", "connection"].includes(name),
    );
    expect(sent.sort()).toEqual(
      Object.keys(expected.headers)
        .map((name) => name.toLowerCase())
        .sort(),
    );
    for (const [name, value] of Object.entries(expected.headers))
      expect(delivery.headers[name.toLowerCase()]).toBe(value);
    // @jiter/node accepts it as before.
    init({ apiKey: "pk_test_unused", signingSecret: org.signingSecret, baseUrl: "http://127.0.0.1:1/api" });
    expect(
      signatureIsValid({
        signature: String(delivery.headers["x-jiter-signature"]),
        requestTimestamp: String(delivery.headers["x-jiter-request-timestamp"]),
        body: JSON.parse(delivery.rawBody),
      }),
    ).toBe(true);
  });
});

describe("method, headers and body", () => {
  it("sends a PUT of the raw JSON payload with the client's headers, signed over exactly those bytes", async () => {
    const to = await receiver();
    const payload = '{"order":42,"items":["a","b"]}';
    const event = await scheduleWithPolicy(
      to,
      { method: "PUT", body: "raw", headers: { Authorization: "Bearer s3cret-token-123", "X-Tenant": "acme" } },
      { payload },
    );
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const [delivery] = to.deliveriesOf(event.id);
    if (!delivery) throw new Error("no delivery");
    expect(delivery.method).toBe("PUT");
    expect(delivery.rawBody).toBe(payload);
    expect(delivery.headers["content-type"]).toBe("application/json");
    expect(delivery.headers.authorization).toBe("Bearer s3cret-token-123");
    expect(delivery.headers["x-tenant"]).toBe("acme");
    expect(standardSignatureMatches(delivery, payload)).toBe(true);
    expect(jiterSignatureMatches(delivery, payload)).toBe(true);
    // standardwebhooks itself verifies the raw JSON body.
    expect(
      new Webhook(org.signingSecret).verify(delivery.rawBody, {
        "webhook-id": String(delivery.headers["webhook-id"]),
        "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
        "webhook-signature": String(delivery.headers["webhook-signature"]),
      }),
    ).toEqual(JSON.parse(payload));
  });

  it("sends a raw text payload as text/plain, and the client's Content-Type when it names one", async () => {
    const to = await receiver();
    const plain = await scheduleWithPolicy(to, { body: "raw" }, { payload: "hello, world" });
    const own = await scheduleWithPolicy(
      to,
      { method: "PATCH", body: "raw", headers: { "Content-Type": "application/xml" } },
      { payload: "<a>1</a>" },
    );
    await expect
      .poll(() => Promise.all([statusOf(context, plain.id), statusOf(context, own.id)]))
      .toEqual(["Sent", "Sent"]);
    const [text] = to.deliveriesOf(plain.id);
    const [xml] = to.deliveriesOf(own.id);
    if (!text || !xml) throw new Error("missing delivery");
    expect([text.method, text.headers["content-type"], text.rawBody]).toEqual([
      "POST",
      "text/plain; charset=utf-8",
      "hello, world",
    ]);
    expect([xml.method, xml.headers["content-type"], xml.rawBody]).toEqual(["PATCH", "application/xml", "<a>1</a>"]);
    expect(standardSignatureMatches(text, "hello, world")).toBe(true);
    expect(standardSignatureMatches(xml, "<a>1</a>")).toBe(true);
  });

  it("sends a GET and a DELETE without a body, their signatures over the empty string", async () => {
    const to = await receiver();
    const get = await scheduleWithPolicy(to, { method: "GET" });
    const remove = await scheduleWithPolicy(to, { method: "DELETE", body: "raw" });
    await expect
      .poll(() => Promise.all([statusOf(context, get.id), statusOf(context, remove.id)]))
      .toEqual(["Sent", "Sent"]);
    for (const [event, method] of [
      [get, "GET"],
      [remove, "DELETE"],
    ] as const) {
      const [delivery] = to.deliveriesOf(event.id);
      if (!delivery) throw new Error("no delivery");
      expect(delivery.method).toBe(method);
      expect(delivery.rawBody).toBe("");
      expect(delivery.headers["content-type"]).toBeUndefined();
      expect(standardSignatureMatches(delivery, "")).toBe(true);
      expect(jiterSignatureMatches(delivery, "")).toBe(true);
    }
  });
});

describe("timeout and retries", () => {
  it("gives up an attempt after the event's own timeoutMs", async () => {
    const to = await receiver({ delayMs: 2_500 });
    const event = await scheduleWithPolicy(to, { timeoutMs: 1_000, retry: { delaysMs: [] } });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Failed To Send");
    const attempts = await context.db.eventAttempt.findMany({ where: { eventId: event.id } });
    expect(attempts.map((attempt) => attempt.error)).toEqual(["Timed out after 1000 ms"]);
    expect(attempts[0]?.durationMs).toBeGreaterThanOrEqual(1_000);
    expect(attempts[0]?.durationMs).toBeLessThan(2_000);
  });

  it("follows a fixed schedule within 150 ms, then ends Failed To Send after the last", async () => {
    const to = await receiver({ status: () => 500 });
    const event = await scheduleWithPolicy(to, { retry: { delaysMs: [400, 800, 300] } });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Failed To Send");
    const gaps = gapsOf(to.deliveriesOf(event.id));
    expect(gaps).toHaveLength(3);
    gaps.forEach((gap, n) => {
      expect(Math.abs(gap - ([400, 800, 300][n] as number))).toBeLessThanOrEqual(150);
    });
    expect(await context.db.eventAttempt.count({ where: { eventId: event.id } })).toBe(4);
  });

  it("follows an exponential schedule capped at maxDelayMs within 150 ms", async () => {
    const to = await receiver({ status: () => 503 });
    const event = await scheduleWithPolicy(to, {
      retry: { attempts: 3, backoff: "exponential", initialDelayMs: 250, maxDelayMs: 700 },
    });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Failed To Send");
    const gaps = gapsOf(to.deliveriesOf(event.id));
    // 250, 500, then 1,000 capped at 700.
    expect(gaps).toHaveLength(3);
    gaps.forEach((gap, n) => {
      expect(Math.abs(gap - ([250, 500, 700][n] as number))).toBeLessThanOrEqual(150);
    });
  });

  it("waits at least a 429's Retry-After before the next attempt, and counts it as an attempt", async () => {
    const to = await receiver({
      status: (n) => (n === 0 ? 429 : 200),
      answerHeaders: (n) => (n === 0 ? { "Retry-After": "1" } : undefined),
    });
    const event = await scheduleWithPolicy(to, { retry: { delaysMs: [100] } });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const [gap] = gapsOf(to.deliveriesOf(event.id));
    expect(gap).toBeGreaterThanOrEqual(1_000);
    expect(gap).toBeLessThan(1_150);
    const attempts = await context.db.eventAttempt.findMany({
      where: { eventId: event.id },
      orderBy: { attempt: "asc" },
    });
    expect(attempts.map((attempt) => attempt.responseStatus)).toEqual([429, 200]);
  });

  it("ends the delivery when the next attempt would start after scheduledTime + maxAgeMs", async () => {
    const to = await receiver({ status: () => 500 });
    const event = await scheduleWithPolicy(to, { retry: { delaysMs: [500, 500, 500, 500], maxAgeMs: 1_200 } });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Failed To Send");
    const deliveries = to.deliveriesOf(event.id);
    // Attempts at about 0, 0.5 and 1.0 s after the event's time; the next, at 1.5 s, is too late.
    expect(deliveries).toHaveLength(3);
    for (const delivery of deliveries) {
      expect(delivery.at - event.scheduledTime.getTime()).toBeLessThanOrEqual(1_200);
    }
  });

  it("ends the delivery at once on a status of stopOnStatus", async () => {
    const to = await receiver({ status: () => 404 });
    const event = await scheduleWithPolicy(to, { retry: { delaysMs: [200, 200], stopOnStatus: [404, 410] } });
    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Failed To Send");
    // The first answer ended it: the status is final in the statement that recorded attempt 1, so
    // no other attempt can follow.
    const attempts = await context.db.eventAttempt.findMany({ where: { eventId: event.id } });
    expect(attempts.map((attempt) => [attempt.attempt, attempt.responseStatus])).toEqual([[1, 404]]);
    expect(to.deliveriesOf(event.id)).toHaveLength(1);
  });

  it("hands a retry later than the prepare window back to the queue with the claim released, and delivers it on time", async () => {
    const to = await receiver({ status: (n) => (n === 0 ? 500 : 200) });
    const delay = PREPARE_AHEAD_MS + 1_500;
    const event = await scheduleWithPolicy(to, { retry: { delaysMs: [delay] } });
    await expect.poll(() => to.deliveriesOf(event.id).length, { timeout: 10_000 }).toBe(1);
    // Between the attempts the event is Queued and nobody's: the job waits in Redis.
    await expect
      .poll(async () => (await context.db.event.findUniqueOrThrow({ where: { id: event.id } })).claimedBy, {
        timeout: 2_000,
      })
      .toBeNull();
    expect(await statusOf(context, event.id)).toBe("Queued");
    await expect.poll(() => statusOf(context, event.id), { timeout: delay + 5_000 }).toBe("Sent");
    const [gap] = gapsOf(to.deliveriesOf(event.id));
    expect(gap).toBeGreaterThanOrEqual(delay);
    expect(gap).toBeLessThan(delay + 500);
  }, 20_000);
});

describe("a worker replaced between attempts", () => {
  it("resumes the delivery in another worker with the event's own schedule and attempt count", async () => {
    const to = await receiver({ status: (n) => (n < 2 ? 500 : 200) });
    // A first retry beyond the prepare window (it waits in Redis), then a short one.
    const event = await scheduleWithPolicy(to, { retry: { delaysMs: [PREPARE_AHEAD_MS + 1_000, 400] } });
    await expect.poll(() => to.deliveriesOf(event.id).length, { timeout: 10_000 }).toBe(1);
    // The worker that made the first attempt goes away; another takes over the queue.
    await worker.stop();
    worker = createWorker({ ...createTestApiDeps(context).deps });
    await worker.start();
    await expect.poll(() => statusOf(context, event.id), { timeout: 15_000 }).toBe("Sent");
    const gaps = gapsOf(to.deliveriesOf(event.id));
    expect(gaps).toHaveLength(2);
    expect(gaps[0]).toBeGreaterThanOrEqual(PREPARE_AHEAD_MS + 1_000);
    expect(Math.abs((gaps[1] as number) - 400)).toBeLessThanOrEqual(150);
    const attempts = await context.db.eventAttempt.findMany({
      where: { eventId: event.id },
      orderBy: { attempt: "asc" },
    });
    expect(attempts.map((attempt) => [attempt.attempt, attempt.responseStatus])).toEqual([
      [1, 500],
      [2, 500],
      [3, 200],
    ]);
  }, 30_000);
});

describe("cron runs", () => {
  it("send with the cron job's own fields over the organization's default of the moment the run is created", async () => {
    const to = await receiver({ status: (n) => (n === 0 ? 500 : 200) });
    const job = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination: to.url, payload: "tick" },
      new Date(),
      10,
    );
    await context.db.$executeRaw`UPDATE cron_jobs SET delivery_policy = ${JSON.stringify({
      method: "PUT",
      body: "raw",
    })}::jsonb WHERE id = ${job.id}`;
    await context.db.$executeRaw`UPDATE organizations SET delivery_policy = ${JSON.stringify({
      method: "PATCH",
      headers: { "X-Org": "default" },
      retry: { delaysMs: [300] },
    })}::jsonb WHERE id = ${org.orgId}`;
    try {
      const { cronQueue } = createTestApiDeps(context);
      const at = Math.floor(Date.now() / 60_000) * 60_000;
      await cronQueue.add(CRON_RUN_JOB, { cronJobId: job.id, scheduledFor: at });
      await expect
        .poll(() => context.db.cronRun.findFirst({ where: { cronJobId: job.id } }))
        .toMatchObject({ status: "Sent" });
    } finally {
      await context.db.$executeRaw`UPDATE organizations SET delivery_policy = NULL WHERE id = ${org.orgId}`;
    }
    const run = await context.db.cronRun.findFirstOrThrow({ where: { cronJobId: job.id } });
    expect(run.deliveryPolicy).toEqual({
      method: "PUT",
      body: "raw",
      headers: { "X-Org": "default" },
      retry: { delaysMs: [300] },
    });
    const deliveries = to.deliveriesOf(run.id);
    expect(deliveries.map((delivery) => [delivery.method, delivery.rawBody, delivery.headers["x-org"]])).toEqual([
      ["PUT", "tick", "default"],
      ["PUT", "tick", "default"],
    ]);
    // The organization's retry schedule: 300 ms, not the deployment's 3 s. A cron run's retry is its
    // firing's job delayed in BullMQ, handed over up to 1/hz of Redis late (100 ms at hz 10), and
    // the firing is decided again in Postgres before it is sent: the bound is far from 3 s, not tight.
    const [gap] = gapsOf(deliveries);
    expect(gap as number).toBeGreaterThanOrEqual(300 - 50);
    expect(gap as number).toBeLessThan(2_000);
  });
});

describe("log lines", () => {
  it("never carry a header value of the policy", async () => {
    const to = await receiver({ status: () => 500 });
    const lines: string[] = [];
    const { pino } = await import("pino");
    const logger = pino({ level: "debug" }, { write: (line: string) => void lines.push(line) });
    const own = createWorker({ ...createTestApiDeps(context).deps, logger });
    await worker.stop();
    await own.start();
    try {
      const event = await scheduleWithPolicy(to, {
        headers: { Authorization: "Bearer s3cret-token-456", "X-Api-Key": "k3y-789" },
        retry: { delaysMs: [100] },
      });
      await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Failed To Send");
      await expect.poll(() => lines.some((line) => line.includes("event failed to send"))).toBe(true);
    } finally {
      await own.stop();
      worker = createWorker({ ...createTestApiDeps(context).deps });
      await worker.start();
    }
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((line) => line.includes("s3cret-token-456") || line.includes("k3y-789"))).toEqual([]);
  });
});
