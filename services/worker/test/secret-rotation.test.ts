import { init, signatureIsValid, webhookHandler } from "@jiter/node";
import { createCronJob, cronSchedulerId, endSigningSecretOverlap, rotateSigningSecret } from "@punctual/core";
import { Webhook, WebhookVerificationError } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  fireEverySecond,
  PER_SECOND_CRON_SETTINGS,
  reconcilerSettled,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { scheduleEvent, statusOf } from "../../../test/support/events.ts";
import { type Delivery, type Receiver, startTestReceiver } from "../../../test/support/receiver.ts";
import { startTestWorker } from "../../../test/support/worker.ts";

// Real deliveries by a real worker around a signing-secret rotation: during the overlap
// webhook-signature verifies under the new and the old secret and X-Jiter-Signature under the old one
// only (so @jiter/node receivers keep working until they switch); once the overlap is ended or has
// passed, everything is signed with the new secret alone.

let context: TestContext;
let receiver: Receiver;
/** Organizations whose overlap the receiver ends, answering 503, when their first delivery arrives. */
const endOverlapOnFirstDelivery = new Set<string>();

beforeAll(async () => {
  context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    RETRY_DELAYS_MS: "200,200",
    ...PER_SECOND_CRON_SETTINGS,
  });
  receiver = await startTestReceiver(context, {
    // @jiter/node's own middleware answers 200 when X-Jiter-Signature verifies under the secret last
    // given to `init` (one per process), 401 otherwise; /hook only records.
    mount: (app) => {
      app.post(
        "/jiter",
        webhookHandler(async () => {}),
      );
      app.post("/end-overlap/:orgId", async (req, res, next) => {
        if (!endOverlapOnFirstDelivery.delete(req.params.orgId)) return next();
        await endSigningSecretOverlap(context, { orgId: req.params.orgId });
        res.status(503).json({ retry: true });
      });
    },
  });
  await startTestWorker(context);
  // Its first run over, the reconciler stays away from the per-second schedulers installed below.
  await reconcilerSettled(context);
});

afterAll(() => context?.close());

/** Makes @jiter/node verify with `signingSecret` from now on (its middleware and signatureIsValid). */
const jiterUses = (signingSecret: string) =>
  init({ apiKey: "pk_test_unused", signingSecret, baseUrl: "http://127.0.0.1:1/api" });

/** Whether @jiter/node's own check accepts the delivery's X-Jiter-Signature under `signingSecret`. */
function jiterAccepts(delivery: Delivery, signingSecret: string): boolean {
  jiterUses(signingSecret);
  return signatureIsValid({
    signature: String(delivery.headers["x-jiter-signature"]),
    requestTimestamp: String(delivery.headers["x-jiter-request-timestamp"]),
    // What the middleware hands it: the parsed body.
    body: JSON.parse(delivery.rawBody),
  });
}

/** The delivery's payload when standardwebhooks verifies it under `signingSecret`, else the error. */
function standardWebhooksVerify(delivery: Delivery, signingSecret: string): unknown {
  try {
    return new Webhook(signingSecret).verify(delivery.rawBody, {
      "webhook-id": String(delivery.headers["webhook-id"]),
      "webhook-timestamp": String(delivery.headers["webhook-timestamp"]),
      "webhook-signature": String(delivery.headers["webhook-signature"]),
    });
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error;
    throw error;
  }
}

/** Schedules an event of `org` to `path` of the receiver, due in a moment; waits until it is Sent. */
async function deliverEvent(org: TestOrganization, path = "/hook"): Promise<Delivery> {
  const { eventQueue } = createTestApiDeps(context).deps;
  const event = await scheduleEvent(context, eventQueue, {
    orgId: org.orgId,
    destination: receiver.url.replace("/hook", path),
    scheduledTime: new Date(Date.now() + 300),
  });
  await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
  const [delivery, ...more] = receiver.deliveriesOf(event.id);
  expect(more).toHaveLength(0);
  if (!delivery) throw new Error(`no delivery of ${event.id}`);
  return delivery;
}

const signaturesOf = (delivery: Delivery) => String(delivery.headers["webhook-signature"]).split(" ");

describe("events during a rotation's overlap", () => {
  it("verify with standardwebhooks under the new and the old secret, and with @jiter/node under the old only", async () => {
    const org = await createTestOrganization(context);
    const oldSecret = org.signingSecret;
    const { signingSecret: newSecret } = await rotateSigningSecret(context, { orgId: org.orgId });

    // A @jiter/node receiver still configured with the old secret accepts the delivery (200, Sent).
    jiterUses(oldSecret);
    const delivery = await deliverEvent(org, "/jiter");

    expect(signaturesOf(delivery)).toHaveLength(2);
    const expected = { payload: JSON.stringify({ hello: "world" }), scheduledTime: expect.any(String) };
    expect(standardWebhooksVerify(delivery, newSecret)).toEqual(expected);
    expect(standardWebhooksVerify(delivery, oldSecret)).toEqual(expected);
    expect(jiterAccepts(delivery, oldSecret)).toBe(true);
    expect(jiterAccepts(delivery, newSecret)).toBe(false);
    const attempts = await context.db.eventAttempt.findMany({
      where: { eventId: String(delivery.headers["webhook-id"]) },
    });
    expect(attempts.map((attempt) => attempt.responseStatus)).toEqual([200]);
  });

  it("after end-overlap verify under the new secret only, X-Jiter-Signature included", async () => {
    const org = await createTestOrganization(context);
    const oldSecret = org.signingSecret;
    const { signingSecret: newSecret } = await rotateSigningSecret(context, { orgId: org.orgId });
    await endSigningSecretOverlap(context, { orgId: org.orgId });

    jiterUses(newSecret);
    const delivery = await deliverEvent(org, "/jiter");

    expect(signaturesOf(delivery)).toHaveLength(1);
    expect(standardWebhooksVerify(delivery, newSecret)).toMatchObject({ payload: JSON.stringify({ hello: "world" }) });
    expect(standardWebhooksVerify(delivery, oldSecret)).toBeInstanceOf(WebhookVerificationError);
    expect(jiterAccepts(delivery, newSecret)).toBe(true);
    expect(jiterAccepts(delivery, oldSecret)).toBe(false);
  });

  it("once the overlap has passed, verify under the new secret only", async () => {
    const org = await createTestOrganization(context);
    const oldSecret = org.signingSecret;
    const shortOverlap = { ...context, config: { ...context.config, SIGNING_SECRET_OVERLAP_MS: 1_000 } };
    const { signingSecret: newSecret } = await rotateSigningSecret(shortOverlap, { orgId: org.orgId });
    // Until the database's clock, which the claim reads, is past the overlap's end.
    await expect
      .poll(async () => {
        const [row] = await context.db.$queryRaw<{ passed: boolean }[]>`
          SELECT previous_secret_valid_until <= now() AS passed FROM organizations WHERE id = ${org.orgId}`;
        return row?.passed;
      })
      .toBe(true);

    const delivery = await deliverEvent(org);

    expect(signaturesOf(delivery)).toHaveLength(1);
    expect(standardWebhooksVerify(delivery, newSecret)).toMatchObject({ payload: JSON.stringify({ hello: "world" }) });
    expect(standardWebhooksVerify(delivery, oldSecret)).toBeInstanceOf(WebhookVerificationError);
    expect(jiterAccepts(delivery, newSecret)).toBe(true);
    expect(jiterAccepts(delivery, oldSecret)).toBe(false);
  });

  it("a second rotation during the overlap signs with its new secret and the one it replaced, never the first", async () => {
    const org = await createTestOrganization(context);
    const first = org.signingSecret;
    const { signingSecret: second } = await rotateSigningSecret(context, { orgId: org.orgId });
    const { signingSecret: third } = await rotateSigningSecret(context, { orgId: org.orgId });

    const delivery = await deliverEvent(org);

    expect(signaturesOf(delivery)).toHaveLength(2);
    expect(standardWebhooksVerify(delivery, third)).not.toBeInstanceOf(Error);
    expect(standardWebhooksVerify(delivery, second)).not.toBeInstanceOf(Error);
    expect(standardWebhooksVerify(delivery, first)).toBeInstanceOf(WebhookVerificationError);
    expect(jiterAccepts(delivery, second)).toBe(true);
    expect(jiterAccepts(delivery, first)).toBe(false);
  });
});

describe("a retry", () => {
  it("is signed with the secrets of its own time: after the overlap ended, with the new secret only", async () => {
    const org = await createTestOrganization(context);
    const oldSecret = org.signingSecret;
    const { signingSecret: newSecret } = await rotateSigningSecret(context, { orgId: org.orgId });
    endOverlapOnFirstDelivery.add(org.orgId);
    const { eventQueue } = createTestApiDeps(context).deps;
    const event = await scheduleEvent(context, eventQueue, {
      orgId: org.orgId,
      destination: receiver.url.replace("/hook", `/end-overlap/${org.orgId}`),
      scheduledTime: new Date(Date.now() + 300),
    });

    await expect.poll(() => statusOf(context, event.id), { timeout: 10_000 }).toBe("Sent");
    const [first, retry, ...more] = receiver.deliveriesOf(event.id);
    expect(more).toHaveLength(0);
    if (!first || !retry) throw new Error(`expected two deliveries of ${event.id}`);
    expect(signaturesOf(first)).toHaveLength(2);
    expect(jiterAccepts(first, oldSecret)).toBe(true);
    expect(signaturesOf(retry)).toHaveLength(1);
    expect(standardWebhooksVerify(retry, newSecret)).toMatchObject({ payload: JSON.stringify({ hello: "world" }) });
    expect(standardWebhooksVerify(retry, oldSecret)).toBeInstanceOf(WebhookVerificationError);
    expect(jiterAccepts(retry, newSecret)).toBe(true);
    const attempts = await context.db.eventAttempt.findMany({
      where: { eventId: event.id },
      orderBy: { attempt: "asc" },
    });
    expect(attempts.map((attempt) => attempt.responseStatus)).toEqual([503, 200]);
  });
});

describe("cron runs during a rotation's overlap", () => {
  it("are signed like events: webhook-signature under both secrets, X-Jiter-Signature under the old one", async () => {
    const org = await createTestOrganization(context);
    const oldSecret = org.signingSecret;
    const { signingSecret: newSecret } = await rotateSigningSecret(context, { orgId: org.orgId });
    const job = await createCronJob(
      context.db,
      { orgId: org.orgId, expression: "* * * * *", timezone: "UTC", destination: receiver.url, payload: "tick" },
      new Date(),
      10,
    );
    // Driven every second (six fields), as the worker's cron tests do, rather than every minute.
    const cronQueue = await fireEverySecond(context, job.id);
    await expect
      .poll(() => context.db.cronRun.findFirst({ where: { cronJobId: job.id, status: "Sent" } }), { timeout: 10_000 })
      .toBeTruthy();
    await cronQueue.removeJobScheduler(cronSchedulerId(job.id));

    const run = await context.db.cronRun.findFirstOrThrow({ where: { cronJobId: job.id, status: "Sent" } });
    const [delivery] = receiver.deliveriesOf(run.id);
    if (!delivery) throw new Error(`no delivery of ${run.id}`);
    expect(signaturesOf(delivery)).toHaveLength(2);
    expect(standardWebhooksVerify(delivery, newSecret)).toMatchObject({ payload: "tick" });
    expect(standardWebhooksVerify(delivery, oldSecret)).toMatchObject({ payload: "tick" });
    expect(jiterAccepts(delivery, oldSecret)).toBe(true);
    expect(jiterAccepts(delivery, newSecret)).toBe(false);
  });
});
