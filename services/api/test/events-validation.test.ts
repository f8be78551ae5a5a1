import { fixedClock } from "@punctual/core";
import type { Db } from "@punctual/db";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { parseZonedTimestamp } from "../src/events/schemas.ts";

// Every client error of the events API answers with its status and exactly `{message}`.

const NOW = new Date("2030-01-10T12:00:00.000Z");
const DAY_MS = 24 * 60 * 60 * 1000;
const clock = fixedClock(NOW);
const valid = {
  payload: '{"hello":"world"}',
  destination: "https://example.com/hook",
  scheduledTime: "2030-01-11T12:00:00Z",
};

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;

beforeAll(async () => {
  // Over 100 requests a minute on one key: the rate limit is not what this file tests.
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "10000" });
  app = createApp(createTestApiDeps(context, clock).deps);
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

const post = (body: unknown, target = app) => {
  const call = request(target).post("/api/events").set("x-api-key", org.apiKey);
  return body === undefined ? call : call.send(body as object);
};
const put = (id: string, body?: unknown) => {
  const call = request(app).put(`/api/events/${id}`).set("x-api-key", org.apiKey);
  return body === undefined ? call : call.send(body as object);
};
const list = (query: string, target = app) => request(target).get(`/api/events?${query}`).set("x-api-key", org.apiKey);

const FLOW_KEY = "'flowKey' must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-'";

async function expectError(call: PromiseLike<request.Response>, status: number, message: string) {
  const response = await call;
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { message } });
}

describe("POST /api/events refuses a bad body", () => {
  it("names a missing field", async () => {
    for (const field of ["payload", "destination", "scheduledTime"] as const) {
      const { [field]: _omitted, ...rest } = valid;
      await expectError(post(rest), 400, `'${field}' is required`);
    }
    await expectError(post(undefined), 400, "Request body is required");
    await expectError(post([valid]), 400, "Request body must be a JSON object");
  });

  it("names an unknown field, even when it hides a required one", async () => {
    await expectError(post({ ...valid, extra: 1 }), 400, "Unknown field 'extra'");
    const { payload, ...rest } = valid;
    await expectError(post({ ...rest, payloadd: payload }), 400, "Unknown field 'payloadd'");
  });

  it("names a field of the wrong type", async () => {
    await expectError(post({ ...valid, payload: { a: 1 } }), 400, "'payload' must be a string");
    await expectError(post({ ...valid, destination: 42 }), 400, "'destination' must be a string");
    await expectError(post({ ...valid, scheduledTime: 1_900_000_000_000 }), 400, "'scheduledTime' must be a string");
    await expectError(post({ ...valid, payload: null }), 400, "'payload' must be a string");
  });

  it("accepts a payload of exactly 1024 UTF-8 bytes and refuses 1025", async () => {
    const exact = `${"€".repeat(341)}a`; // 341 × 3 bytes + 1 = 1024 bytes, 342 characters
    expect(Buffer.byteLength(exact)).toBe(1024);
    const accepted = await post({ ...valid, payload: exact });
    expect(accepted.status).toBe(200);
    expect(accepted.body.payload).toBe(exact);
    await expectError(post({ ...valid, payload: `${exact}a` }), 400, "Payload must be at most 1024 bytes");
    await expectError(post({ ...valid, payload: "€".repeat(342) }), 400, "Payload must be at most 1024 bytes");
  });

  it("uses the configured payload limit in its message", async () => {
    const { deps } = createTestApiDeps(context, clock);
    const small = createApp({ ...deps, config: { ...deps.config, MAX_PAYLOAD_BYTES: 10 } });
    await expectError(post({ ...valid, payload: "12345678901" }, small), 400, "Payload must be at most 10 bytes");
  });

  it("refuses text Postgres cannot store", async () => {
    const message = "Payload must be valid UTF-8 text without NUL characters";
    await expectError(post({ ...valid, payload: "a\u0000b" }), 400, message);
    await expectError(post({ ...valid, payload: "a\ud800b" }), 400, message);
  });

  it("refuses a destination that is not an absolute http(s) URL", async () => {
    for (const destination of [
      "ftp://example.com/x",
      "example.com/hook",
      "/hook",
      "http://",
      "https:// spaced.example",
      "javascript:alert(1)",
      "",
    ]) {
      await expectError(post({ ...valid, destination }), 400, "Destination must be an http or https URL");
    }
    const long = `https://example.com/${"a".repeat(2048 - "https://example.com/".length)}`;
    expect((await post({ ...valid, destination: long })).status).toBe(200);
    await expectError(post({ ...valid, destination: `${long}a` }), 400, "Destination must be at most 2048 characters");
  });

  it("refuses at create and edit the URLs the parser would repair, as the worker does", async () => {
    // Its own organization: this file's key is already near the per-minute rate limit.
    const own = await createTestOrganization(context);
    const send = (call: request.Test, body: object) => call.set("x-api-key", own.apiKey).send(body);
    const created = await send(request(app).post("/api/events"), valid);
    expect(created.status).toBe(200);
    for (const destination of ["http:///example.com/x", "https://\\example.com/x"]) {
      const message = "Destination must be an http or https URL";
      await expectError(send(request(app).post("/api/events"), { ...valid, destination }), 400, message);
      await expectError(send(request(app).put(`/api/events/${created.body.id}`), { destination }), 400, message);
    }
  });

  it("refuses an unparsable time", async () => {
    for (const scheduledTime of [
      "tomorrow",
      "2030-01-11",
      "2030-02-31T12:00:00Z",
      "2030-01-11T25:00:00Z",
      "1893456000000",
    ]) {
      await expectError(post({ ...valid, scheduledTime }), 400, "Please enter a valid time");
    }
  });

  it("says a time zone is required for a valid date-time without one, at create and edit", async () => {
    const message = "'scheduledTime' must include a time zone, e.g. 2026-12-01T10:00:00Z or 2026-12-01T10:00:00+02:00";
    // Its own organization: this file's key is already near the per-minute rate limit.
    const own = await createTestOrganization(context);
    const send = (call: request.Test, body: object) => call.set("x-api-key", own.apiKey).send(body);
    const created = await send(request(app).post("/api/events"), valid);
    expect(created.status).toBe(200);
    for (const scheduledTime of ["2030-01-11T12:00:00", "2030-01-11T12:00", "2030-01-11T12:00:00.250"]) {
      await expectError(send(request(app).post("/api/events"), { ...valid, scheduledTime }), 400, message);
      await expectError(send(request(app).put(`/api/events/${created.body.id}`), { scheduledTime }), 400, message);
    }
    // Impossible or garbled date-times keep the general sentence, zone or not.
    await expectError(
      send(request(app).post("/api/events"), { ...valid, scheduledTime: "2030-02-31T12:00:00" }),
      400,
      "Please enter a valid time",
    );
  });

  it("refuses a time that is not in the future by the service's clock", async () => {
    for (const scheduledTime of ["2030-01-10T11:59:59.999Z", NOW.toISOString(), "2030-01-10T13:00:00+01:00"]) {
      await expectError(
        post({ ...valid, scheduledTime }),
        400,
        "Please make sure your scheduled time is in the future",
      );
    }
  });

  it("refuses a time more than 365 days ahead and accepts exactly 365", async () => {
    const limit = new Date(NOW.getTime() + 365 * DAY_MS);
    const accepted = await post({ ...valid, scheduledTime: limit.toISOString() });
    expect(accepted.status).toBe(200);
    await expectError(
      post({ ...valid, scheduledTime: new Date(limit.getTime() + 1).toISOString() }),
      400,
      "Please make sure your scheduled time is at most 365 days ahead",
    );
  });

  it("accepts a time with an offset and answers in UTC with milliseconds", async () => {
    const response = await post({ ...valid, scheduledTime: "2030-01-11T14:30+02:00" });
    expect(response.status).toBe(200);
    expect(response.body.scheduledTime).toBe("2030-01-11T12:30:00.000Z");
  });

  it("refuses a flowKey that is not 1 to 64 letters, digits, '.', '_', ':' or '-', and accepts one that is", async () => {
    for (const flowKey of ["", "k".repeat(65), "a b", "a/b", "é", "a\u0000b", 42, null, ["a"], { key: "a" }]) {
      await expectError(post({ ...valid, flowKey }), 400, FLOW_KEY);
    }
    const accepted = await post({ ...valid, flowKey: `Tenant-1.invoices_EU:${"k".repeat(43)}` });
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    expect(accepted.body.flowKey).toBe(`Tenant-1.invoices_EU:${"k".repeat(43)}`);
  });

  it("limits the Idempotency-Key header to 255 characters", async () => {
    await expectError(
      post(valid).set("Idempotency-Key", "k".repeat(256)),
      400,
      "Idempotency-Key must be at most 255 characters",
    );
    expect((await post(valid).set("Idempotency-Key", "k".repeat(255))).status).toBe(200);
  });
});

describe("PUT /api/events/:eventId refuses a bad body", () => {
  let eventId: string;
  beforeAll(async () => {
    eventId = (await post(valid)).body.id;
  });

  it("needs at least one change", async () => {
    const message = "At least one of 'payload', 'destination', 'scheduledTime' or 'status' is required";
    await expectError(put(eventId, {}), 400, message);
    await expectError(put(eventId), 400, message);
  });

  it("only lets status become Cancelled", async () => {
    for (const status of ["Sent", "Pending", "cancelled", 5, null]) {
      await expectError(put(eventId, { status }), 400, "'status' can only be set to 'Cancelled'");
    }
  });

  it("applies the create rules to each field", async () => {
    await expectError(put(eventId, { colour: "red" }), 400, "Unknown field 'colour'");
    await expectError(put(eventId, { payload: "x".repeat(1025) }), 400, "Payload must be at most 1024 bytes");
    await expectError(put(eventId, { destination: "mailto:a@b.c" }), 400, "Destination must be an http or https URL");
    await expectError(put(eventId, { scheduledTime: "soon" }), 400, "Please enter a valid time");
    await expectError(
      put(eventId, { scheduledTime: "2030-01-09T00:00:00Z" }),
      400,
      "Please make sure your scheduled time is in the future",
    );
    await expectError(
      put(eventId, { scheduledTime: "2031-01-11T00:00:00Z" }),
      400,
      "Please make sure your scheduled time is at most 365 days ahead",
    );
    await expectError(put(eventId, { payload: 7 }), 400, "'payload' must be a string");
    for (const flowKey of ["", "k".repeat(65), "a b", 42]) await expectError(put(eventId, { flowKey }), 400, FLOW_KEY);
    // A refused flow key beside a valid change: nothing is written.
    await expectError(put(eventId, { payload: '{"changed":true}', flowKey: "a b" }), 400, FLOW_KEY);
    const [row] = await context.db.$queryRaw<{ payload: string; flow_key: string | null }[]>`
      SELECT payload, flow_key FROM events WHERE id = ${eventId}`;
    expect(row).toEqual({ payload: valid.payload, flow_key: null });
  });

  it("refuses to change an event that is no longer Pending", async () => {
    const cancelled = await put(eventId, { status: "Cancelled" });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.status).toBe("Cancelled");
    await expectError(put(eventId, { payload: "again" }), 400, "Only Pending events can be updated");
    await expectError(put(eventId, { status: "Cancelled" }), 400, "Only Pending events can be updated");
  });

  it("answers a missing event with 404", async () => {
    await expectError(put("evt_01jdoesnotexist000000000000", { payload: "x" }), 404, "Unable to find event");
    await expectError(
      request(app).get("/api/events/evt_01jdoesnotexist000000000000").set("x-api-key", org.apiKey),
      404,
      "Unable to find event",
    );
  });
});

describe("GET /api/events refuses a bad query", () => {
  it("names an invalid status", async () => {
    await expectError(list("status=Nope"), 400, "Invalid status: Nope");
    await expectError(list("status=Pending,pending"), 400, "Invalid status: pending");
    await expectError(list("status=Pending,,Sent"), 400, "'status' must not be empty");
  });

  it("names an unparsable date", async () => {
    for (const param of [
      "scheduledStartDate",
      "scheduledEndDate",
      "sentAtStartDate",
      "sentAtEndDate",
      "failedAtStartDate",
      "failedAtEndDate",
    ]) {
      await expectError(list(`${param}=yesterday`), 400, `Invalid date: ${param}`);
      await expectError(list(`${param}=2030-01-09T00:00:00`), 400, `Invalid date: ${param}`);
    }
  });

  it("keeps sent and failed start bounds inside the search window", async () => {
    const eightDaysAgo = new Date(NOW.getTime() - 8 * DAY_MS).toISOString();
    const sixDaysAgo = new Date(NOW.getTime() - 6 * DAY_MS).toISOString();
    const tomorrow = new Date(NOW.getTime() + DAY_MS).toISOString();
    await expectError(
      list(`sentAtStartDate=${eightDaysAgo}`),
      400,
      "sentAtStartDate is outside of the searchable range",
    );
    await expectError(list(`sentAtStartDate=${tomorrow}`), 400, "sentAtStartDate is outside of the searchable range");
    await expectError(
      list(`failedAtStartDate=${eightDaysAgo}`),
      400,
      "failedAtStartDate is outside of the searchable range",
    );
    await expectError(
      list(`failedAtStartDate=${tomorrow}`),
      400,
      "failedAtStartDate is outside of the searchable range",
    );
    expect((await list(`sentAtStartDate=${sixDaysAgo}&failedAtStartDate=${sixDaysAgo}`)).status).toBe(200);
  });

  it("checks limit and cursor", async () => {
    for (const limit of ["0", "1001", "abc", "1.5", "-1", ""]) {
      await expectError(list(`limit=${limit}`), 400, "limit must be an integer between 1 and 1000");
    }
    for (const cursor of ["garbage!", "", Buffer.from("[1,2]").toString("base64url"), "bm90LWpzb24"]) {
      await expectError(list(`cursor=${cursor}`), 400, "Invalid cursor");
    }
  });

  it("refuses unknown and repeated parameters", async () => {
    await expectError(list("colour=red"), 400, "Unknown query parameter 'colour'");
    await expectError(list("status[]=Pending"), 400, "Unknown query parameter 'status[]'");
    await expectError(list("status=Pending&status=Sent"), 400, "Query parameter 'status' must be given only once");
  });
});

describe("server failures", () => {
  /** The real database for the API key check, a failing one for everything the routes ask. */
  function failingRoutesDb(db: Db): Db {
    const fail = () => Promise.reject(new Error("connection to database punctual lost"));
    // The API key lookup (raw SQL on api_keys) still reaches the real database.
    const queryRaw = (strings: TemplateStringsArray, ...values: unknown[]) =>
      strings.join("?").includes("FROM api_keys") ? db.$queryRaw(strings, ...values) : fail();
    return new Proxy(db, {
      get: (target, property) => {
        if (property === "$queryRaw") return queryRaw;
        if (property === "$executeRaw" || property === "$transaction") return fail;
        return Reflect.get(target, property);
      },
    });
  }

  it("answers with each route's own 500 message and no details", async () => {
    const { deps } = createTestApiDeps(context, clock);
    const broken = createApp({ ...deps, db: failingRoutesDb(context.db) });
    const cases = [
      [post(valid, broken), "Unable to create the event"],
      [list("", broken), "Unable to get events"],
      [request(broken).get("/api/events/evt_x").set("x-api-key", org.apiKey), "An error occurred finding the event"],
      [
        request(broken).put("/api/events/evt_x").set("x-api-key", org.apiKey).send({ payload: "x" }),
        "Unable to update the event",
      ],
    ] as const;
    for (const [call, message] of cases) await expectError(call, 500, message);
  });
});

describe("parseZonedTimestamp", () => {
  it("reads ISO 8601 times with a zone and refuses impossible or zone-less ones", () => {
    const iso = (text: string) => parseZonedTimestamp(text)?.toISOString();
    expect(iso("2030-12-31T23:30:00-01:30")).toBe("2031-01-01T01:00:00.000Z");
    expect(iso("2030-06-01T10:00+0530")).toBe("2030-06-01T04:30:00.000Z");
    expect(iso("2024-02-29T23:59:59.9999Z")).toBe("2024-02-29T23:59:59.999Z");
    expect(iso("0030-01-01T00:00:00Z")).toBe("0030-01-01T00:00:00.000Z");
    for (const text of [
      "2023-02-29T00:00:00Z",
      "2030-06-01T10:00:00",
      "2030-06-01T10:60:00Z",
      "2030-06-01T10:00:00+24:00",
    ]) {
      expect(parseZonedTimestamp(text)).toBeUndefined();
    }
  });
});
