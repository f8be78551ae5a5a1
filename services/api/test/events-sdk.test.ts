import request from "supertest";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { defaultEffectivePolicy } from "../../../test/support/delivery-policy.ts";
import { type LiveApi, startLiveApi } from "../../../test/support/live-api.ts";

// The real `@jiter/node` 0.4.0 client, unchanged, against a listening Punctual API. The SDK keeps
// one global configuration (and one axios instance) per process, so this file uses one organization.

const sdk = await import("@jiter/node");
type JiterSdk = typeof sdk.default.default;
// Node's own ESM loader hands over `module.exports` as `default`, so the SDK object is
// `.default.default`; vitest's CommonJS interop unwraps one level already. Accept both.
const Jiter: JiterSdk = (sdk.default as { default?: JiterSdk }).default ?? (sdk.default as unknown as JiterSdk);
const { EventStatus } = sdk;

let context: TestContext;
let api: LiveApi;
let org: TestOrganization;
const HOUR_MS = 60 * 60 * 1000;

beforeAll(async () => {
  context = await createTestContext();
  org = await createTestOrganization(context);
  api = await startLiveApi(context);
  // The SDK's default is 'https://app.jiter.dev/api' and it appends '/events': the base includes /api.
  Jiter.init({ apiKey: org.apiKey, signingSecret: org.signingSecret, baseUrl: `${api.baseUrl}/api` });
});
afterAll(() => context?.close());

const inHours = (hours: number) => new Date(Date.now() + hours * HOUR_MS).toISOString();

/** The event most tests start from, created through the SDK. */
const createRemindEvent = () =>
  Jiter.Events.createEvent({
    payload: JSON.stringify({ action: "remind" }),
    destination: "https://example.com/webhooks/jiter",
    scheduledTime: inHours(1),
  });

// The SDK is bound to one organization: every test starts from one without events, so that each
// passes alone and in any order, and the lists hold exactly what the test created.
beforeEach(async () => {
  await context.db.event.deleteMany({ where: { orgId: org.orgId } });
});

describe("@jiter/node 0.4.0 against Punctual", () => {
  it("creates an event", async () => {
    const scheduledTime = inHours(1);
    const event = await Jiter.Events.createEvent({
      payload: JSON.stringify({ action: "remind" }),
      destination: "https://example.com/webhooks/jiter",
      scheduledTime,
    });
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_[0-9a-z]{26}$/),
      payload: '{"action":"remind"}',
      destination: "https://example.com/webhooks/jiter",
      scheduledTime,
      status: "Pending",
      org: org.orgId,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      replayOf: null,
      // New fields beside the SDK's: no flow (contract §10.2), the effective delivery policy (§10.1).
      flowKey: null,
      callbackUrl: null,
      labels: {},
      ...defaultEffectivePolicy(context.config),
    });
  });

  it("gets the event with its (empty) history", async () => {
    const { id } = await createRemindEvent();
    const event = await Jiter.Events.getEvent({ id });
    expect(event).toMatchObject({ id, status: "Pending", payload: '{"action":"remind"}', history: [] });
  });

  it("edits the payload", async () => {
    const { id } = await createRemindEvent();
    const event = await Jiter.Events.editEvent({ id, payload: '{"action":"changed"}' });
    expect(event).toMatchObject({ id, status: "Pending", payload: '{"action":"changed"}' });
    expect((await Jiter.Events.getEvent({ id })).payload).toBe('{"action":"changed"}');
  });

  /** A second event, two hours ahead, cancelled through the SDK. */
  async function createCancelledEvent() {
    const second = await Jiter.Events.createEvent({
      payload: "{}",
      destination: "https://example.com/webhooks/jiter",
      scheduledTime: inHours(2),
    });
    const cancelled = await Jiter.Events.editEvent({ id: second.id, status: EventStatus.Cancelled });
    expect(cancelled).toMatchObject({ id: second.id, status: "Cancelled" });
    return second.id;
  }

  it("cancels an event", async () => {
    const id = await createCancelledEvent();
    expect(await Jiter.Events.getEvent({ id })).toMatchObject({ id, status: "Cancelled" });
  });

  it("lists events by one status and by a list of statuses", async () => {
    const created = { first: (await createRemindEvent()).id, second: await createCancelledEvent() };
    const third = await Jiter.Events.createEvent({
      payload: "{}",
      destination: "https://example.com/webhooks/jiter",
      scheduledTime: inHours(3),
    });
    await context.db.$executeRaw`UPDATE events SET status = 'Sent', sent_at = now() WHERE id = ${third.id}`;

    const pending = await Jiter.Events.getManyEvents({ status: EventStatus.Pending });
    expect(pending.map((event) => event.id)).toEqual([created.first]);

    const several = await Jiter.Events.getManyEvents({ status: [EventStatus.Pending, EventStatus.Cancelled] });
    expect(several.map((event) => [event.id, event.status])).toEqual([
      [created.first, "Pending"],
      [created.second, "Cancelled"],
    ]);

    // Statuses with spaces travel as `Failed+To+Send`.
    const sent = await Jiter.Events.getManyEvents({ status: [EventStatus.FailedToSend, EventStatus.Sent] });
    expect(sent).toEqual([expect.objectContaining({ id: third.id, status: "Sent", sentAt: expect.any(String) })]);

    const all = await Jiter.Events.getManyEvents();
    expect(all.map((event) => event.id)).toEqual([created.first, created.second, third.id]);

    const window = await Jiter.Events.getManyEvents({
      scheduledStartDate: inHours(1.5),
      scheduledEndDate: inHours(2.5),
    });
    expect(window.map((event) => event.id)).toEqual([created.second]);
  });

  it("surfaces errors as the SDK's rejected requests carrying {message}", async () => {
    await expect(Jiter.Events.getEvent({ id: "evt_missing" })).rejects.toMatchObject({
      response: { status: 404, data: { message: "Unable to find event" } },
    });
    await expect(
      Jiter.Events.getManyEvents({ sentAtStartDate: new Date(Date.now() - 8 * 24 * HOUR_MS).toISOString() }),
    ).rejects.toMatchObject({
      response: { status: 400, data: { message: "sentAtStartDate is outside of the searchable range" } },
    });
  });

  it("is answered the same way without the SDK (sanity check of the raw shapes)", async () => {
    const { id } = await createRemindEvent();
    const response = await request(api.baseUrl).get(`/api/events/${id}`).set("x-api-key", org.apiKey);
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(Object.keys(response.body).sort()).toEqual(
      [
        "createdAt",
        "destination",
        "history",
        "id",
        "org",
        "payload",
        "replayOf",
        "scheduledTime",
        "status",
        "updatedAt",
        // No flow (contract §10.2), no labels (§10.5), then the effective delivery policy (§10.1).
        "flowKey",
        "callbackUrl",
        "labels",
        "method",
        "headers",
        "body",
        "timeoutMs",
        "retry",
      ].sort(),
    );
  });
});
