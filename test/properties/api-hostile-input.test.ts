import { createEvent, IDEMPOTENCY_KEY_REUSED } from "@punctual/core";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { INVALID_CURSOR } from "../../services/api/src/events/schemas.ts";
import { FROM_REQUIRED } from "../../services/api/src/stats/schemas.ts";
import {
  anyJson,
  anyText,
  apiKeyHeader,
  bodyText,
  extraHeaders,
  type HostileApi,
  type HostileRequest,
  headerText,
  hostileId,
  NOW,
  nearValidBody,
  sendAndCheck,
  startHostileApi,
} from "./hostile-support.ts";

// The events, statistics and cron jobs APIs and unknown routes under hostile input: whatever a
// client sends (any JSON, broken JSON, raw bytes, huge or deeply nested bodies, wrong types, extra
// fields, odd headers, ids, query strings, forged cursors, times past what Postgres can hold), the
// answer is never a 5xx, an error is exactly `{"message": "…"}`, and a refused request writes
// nothing (rows, contents, quota counters).

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150);
const TIMEOUT = 120_000;

let api: HostileApi;

beforeAll(async () => {
  // A small monthly quota, so that creates and moves also meet the 403 path.
  api = await startHostileApi({ MAX_EVENTS_PER_MONTH: "3" });
});
afterAll(() => api.close());

/** Stands for a Pending event of the organization in a generated path (see `run`). */
const PENDING = "{pending}";

/**
 * A Pending event of the organization, created (outside any checked request, and past the quota)
 * when the requests before have cancelled or moved them all: an edit must have one to work on.
 */
async function pendingEventId(): Promise<string> {
  const { db } = api.context;
  const found = await db.event.findFirst({ where: { orgId: api.org.orgId, status: "Pending" }, select: { id: true } });
  if (found) return found.id;
  const { event } = await createEvent(
    db,
    {
      orgId: api.org.orgId,
      payload: "seed",
      destination: "https://example.com/hook",
      scheduledTime: new Date("2030-02-01T00:00:00Z"),
    },
    NOW,
    2_000_000_000,
  );
  return event.id;
}

const run = (arbitrary: fc.Arbitrary<HostileRequest>, numRuns = RUNS) =>
  fc.assert(
    fc.asyncProperty(arbitrary, async (req) => {
      const path = req.path.includes(PENDING) ? req.path.replace(PENDING, await pendingEventId()) : req.path;
      await sendAndCheck(api, { ...req, path });
    }),
    { numRuns },
  );

/** A body: near-valid fields most of the time, anything at all otherwise; sometimes none. */
const bodyOf = (fields: Parameters<typeof nearValidBody>[0]) =>
  fc.oneof(
    { weight: 3, arbitrary: nearValidBody(fields) },
    { weight: 2, arbitrary: bodyText },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );

function requestArbitrary(
  method: HostileRequest["method"],
  path: fc.Arbitrary<string>,
  body: fc.Arbitrary<string | Buffer | undefined>,
): fc.Arbitrary<HostileRequest> {
  return fc.tuple(path, apiKeyHeader(api), extraHeaders, body).map(([target, key, extra, payload]) => ({
    method,
    path: target,
    headers: { ...extra, ...key },
    body: payload,
  }));
}

/**
 * Times at and past the edges of what a date parameter may name (years 1 to 9999): what JavaScript
 * holds but Postgres cannot (year 0, negative years, +275760), and the first and last instants.
 */
const EDGE_TIMES = [
  "+275760-09-13T00:00:00.000Z",
  "-271821-04-20T00:00:00.000Z",
  "-000001-01-01T00:00:00.000Z",
  "0000-12-31T23:59:59.999Z",
  "0001-01-01T00:00:00.000Z",
  "0001-01-01T05:00:00Z",
  "0001-01-01T00:30:00+01:00",
  "9999-12-31T23:59:59.999Z",
  "9999-12-31T23:00:00-01:00",
  "+010000-01-01T00:00:00.000Z",
];

/** A time in any form: the edges, any instant JavaScript can hold, or any text. */
const anyTime = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...EDGE_TIMES) },
  { weight: 2, arbitrary: fc.date({ noInvalidDate: true }).map((date) => date.toISOString()) },
  { weight: 1, arbitrary: anyText },
);

const base64url = (text: string | Buffer) => Buffer.from(text).toString("base64url");

/**
 * Cursors a client could forge: the right shape with hostile times and ids, JSON of other shapes,
 * base64 of what is not JSON (or not UTF-8), text that is not base64, and very long ones.
 */
const forgedCursor: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        anyTime,
        fc.oneof(
          fc.constantFrom("x", "evt_00000000000000000000000000", "", "\u0000", "\ud800", "a".repeat(101)),
          anyText,
          fc.integer({ min: 100, max: 400 }).map((n) => "é".repeat(n)),
        ),
      )
      .map((pair) => base64url(JSON.stringify(pair))),
  },
  { weight: 2, arbitrary: anyJson.map((value) => base64url(JSON.stringify(value) ?? "null")) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(anyTime, fc.string({ maxLength: 10 }), fc.anything({ maxDepth: 1 }))
      .map(([time, id, extra]) => base64url(JSON.stringify([time, id, extra]) ?? "")),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 60 }).map((bytes) => base64url(Buffer.from(bytes))) },
  { weight: 1, arbitrary: fc.string({ maxLength: 40 }).map((text) => base64url(text)) },
  { weight: 1, arbitrary: anyText },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "",
      "=",
      "WyJ4Il0=",
      "WyIyMDMwLTAxLTAxVDAwOjAwOjAwLjAwMFoiLCJ4Il0=",
      "WyIyMDMwLTAxLTAxVDAwOjAwOjAwLjAwMFoiLCJ4Il0".repeat(12),
      "a".repeat(5_000),
    ),
  },
);

/** A query string of known and unknown parameters with hostile values, sometimes repeated. */
const queryString = fc
  .array(
    fc.tuple(
      fc.oneof(
        fc.constantFrom(
          "status",
          "scheduledStartDate",
          "scheduledEndDate",
          "sentAtStartDate",
          "sentAtEndDate",
          "failedAtStartDate",
          "failedAtEndDate",
          "limit",
          "cursor",
          "__proto__",
          "status[]",
          "limit[0]",
        ),
        fc.string({ maxLength: 8 }),
      ),
      fc.oneof(
        fc.constantFrom(
          "Pending",
          "Sent,Failed To Send",
          "Sent,,Pending",
          "sent",
          "2030-01-05T00:00:00Z",
          "2030-01-12T00:00:00+05:30",
          "0000-01-01T00:00:00Z",
          "9999-12-31T23:59:59-05:00",
          "2030-02-30T00:00:00Z",
          "1",
          "1000",
          "1001",
          "0",
          "-1",
          "1e3",
          "99999999999999999999",
          "eyJ4Ijp0cnVlfQ",
          "WyIyMDMwLTAxLTAxVDAwOjAwOjAwLjAwMFoiLCJ4Il0",
          "",
        ),
        fc.constantFrom(...EDGE_TIMES),
        forgedCursor,
        anyText,
      ),
    ),
    { maxLength: 5 },
  )
  .map((pairs) => {
    const text = pairs.map(([key, value]) => `${encodeURIComponent(key)}=${safeEncode(value)}`).join("&");
    return text === "" ? "" : `?${text}`;
  });

/** encodeURIComponent, or raw percent signs when the text has lone surrogates. */
function safeEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return "%ZZ%";
  }
}

describe("events API under hostile input", () => {
  it(
    "POST /api/events",
    () =>
      run(
        requestArbitrary("post", fc.constant("/api/events"), bodyOf(["payload", "destination", "scheduledTime"])),
        RUNS * 2,
      ),
    TIMEOUT,
  );

  it(
    "GET /api/events with random query strings",
    () =>
      run(
        requestArbitrary(
          "get",
          queryString.map((query) => `/api/events${query}`),
          fc.constant(undefined),
        ),
      ),
    TIMEOUT,
  );

  it(
    "GET /api/events with forged cursors, alone or with other parameters",
    () =>
      run(
        requestArbitrary(
          "get",
          fc
            .tuple(forgedCursor, queryString)
            .map(([cursor, query]) => `/api/events${query === "" ? "?" : `${query}&`}cursor=${safeEncode(cursor)}`),
          fc.constant(undefined),
        ),
        RUNS * 2,
      ),
    TIMEOUT,
  );

  /** A body of the bulk replay: its status and date filters with times at the edges, any instant or any text. */
  const replayFilters = fc
    .record(
      {
        status: fc.oneof(fc.constantFrom("Failed To Send", "Failed To Queue,Failed To Send", "Sent"), anyText),
        scheduledStartDate: anyTime,
        scheduledEndDate: anyTime,
        sentAtStartDate: anyTime,
        sentAtEndDate: anyTime,
        failedAtStartDate: anyTime,
        failedAtEndDate: anyTime,
      },
      { requiredKeys: [] },
    )
    .map((body) => JSON.stringify(body));

  it(
    "POST /api/events/replay with dates at the edges",
    () => run(requestArbitrary("post", fc.constant("/api/events/replay"), fc.oneof(replayFilters, bodyText)), RUNS),
    TIMEOUT,
  );

  it(
    "POST /api/events/:eventId/replay with times at the edges",
    () =>
      run(
        requestArbitrary(
          "post",
          fc
            .oneof({ weight: 3, arbitrary: fc.constant(api.eventId) }, hostileId([api.otherEventId]))
            .map((id) => `/api/events/${id}/replay`),
          fc.oneof(
            anyTime.map((scheduledTime) => JSON.stringify({ scheduledTime })),
            fc.constant(undefined),
            bodyText,
          ),
        ),
        RUNS,
      ),
    TIMEOUT,
  );

  it(
    "GET /api/events/:eventId",
    () =>
      run(
        requestArbitrary(
          "get",
          hostileId([api.eventId, api.otherEventId]).map((id) => `/api/events/${id}`),
          fc.oneof(fc.constant(undefined), bodyText),
        ),
      ),
    TIMEOUT,
  );

  it(
    "PUT /api/events/:eventId",
    () =>
      run(
        requestArbitrary(
          "put",
          fc
            .oneof({ weight: 3, arbitrary: fc.constant(PENDING) }, hostileId([api.eventId, api.otherEventId]))
            .map((id) => `/api/events/${id}`),
          bodyOf(["payload", "destination", "scheduledTime", "status"]),
        ),
        RUNS * 2,
      ),
    TIMEOUT,
  );
});

describe("statistics API under hostile input", () => {
  /** `from`, `to` and `bucket` (and others) with times at the edges, any instant or any text. */
  const statsQuery = fc
    .array(
      fc.tuple(
        fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom("from", "to", "bucket") },
          { weight: 1, arbitrary: fc.constantFrom("cursor", "limit", "from[]", "__proto__") },
          { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
        ),
        fc.oneof(
          { weight: 3, arbitrary: anyTime },
          { weight: 1, arbitrary: fc.constantFrom("hour", "day", "week", "HOUR", "") },
          { weight: 1, arbitrary: anyText },
        ),
      ),
      { maxLength: 4 },
    )
    .map((pairs) => pairs.map(([key, value]) => `${encodeURIComponent(key)}=${safeEncode(value)}`).join("&"));

  it(
    "GET /api/stats",
    () =>
      run(
        requestArbitrary(
          "get",
          statsQuery.map((query) => (query === "" ? "/api/stats" : `/api/stats?${query}`)),
          fc.constant(undefined),
        ),
        RUNS * 2,
      ),
    TIMEOUT,
  );
});

describe("cron jobs API under hostile input", () => {
  const collection = fc.constantFrom("/api/cronjobs", "/api/cronJobs", "/api/CRONJOBS");

  it(
    "POST /api/cronjobs",
    () =>
      run(requestArbitrary("post", collection, bodyOf(["payload", "destination", "expression", "timezone"])), RUNS * 2),
    TIMEOUT,
  );

  it(
    "GET /api/cronjobs and /api/cronjobs/:cronJobId",
    () =>
      run(
        requestArbitrary(
          "get",
          fc.oneof(
            collection.chain((path) => queryString.map((query) => `${path}${query}`)),
            fc.tuple(collection, hostileId([api.cronJobId, api.eventId])).map(([path, id]) => `${path}/${id}`),
          ),
          fc.constant(undefined),
        ),
      ),
    TIMEOUT,
  );

  it(
    "PUT /api/cronjobs/:cronJobId",
    () =>
      run(
        requestArbitrary(
          "put",
          fc
            .tuple(collection, fc.oneof({ weight: 3, arbitrary: fc.constant(api.cronJobId) }, hostileId([api.eventId])))
            .map(([path, id]) => `${path}/${id}`),
          bodyOf(["payload", "destination", "expression", "timezone", "status"]),
        ),
        RUNS * 2,
      ),
    TIMEOUT,
  );

  it(
    "DELETE /api/cronjobs/:cronJobId with ids that name no job of the organization",
    () =>
      run(
        requestArbitrary(
          "delete",
          fc
            .tuple(collection, hostileId([api.eventId, `${api.cronJobId}x`, api.cronJobId.toUpperCase()]))
            .filter(([, id]) => id !== api.cronJobId)
            .map(([path, id]) => `${path}/${id}`),
          fc.oneof(fc.constant(undefined), bodyText),
        ),
      ),
    TIMEOUT,
  );
});

describe("unknown routes and methods", () => {
  it(
    "answer 401 or 404 with {message}",
    () =>
      fc.assert(
        fc.asyncProperty(
          fc.constantFrom<HostileRequest["method"]>("get", "post", "put", "delete", "patch"),
          fc.oneof(
            fc
              .array(hostileId(["events", "cronjobs", "admin", "api"]), { minLength: 1, maxLength: 4 })
              .map((segments) => `/api/${segments.join("/")}`),
            fc.array(hostileId(["x"]), { minLength: 1, maxLength: 3 }).map((segments) => `/${segments.join("/")}`),
            fc.constantFrom("/api", "/api/", "/API/EVENTS/x/y", "/api/events/a/b", "/api//events", "/", "/api/admin/"),
          ),
          apiKeyHeader(api),
          extraHeaders,
          fc.oneof(fc.constant(undefined), bodyText),
          async (method, path, key, extra, body) => {
            const outcome = await sendAndCheck(api, { method, path, headers: { ...extra, ...key }, body });
            // Every documented route was excluded above only by chance: allow what a real route says.
            expect(outcome.status).toBeLessThan(500);
          },
        ),
        { numRuns: RUNS },
      ),
    TIMEOUT,
  );

  it("refuses each kind of broken request with its own sentence", async () => {
    const key = { "x-api-key": api.org.apiKey };
    const json = { ...key, "content-type": "application/json" };
    const cases: [HostileRequest, number, string | undefined][] = [
      [{ method: "post", path: "/api/events", headers: json, body: "{" }, 400, "Request body is not valid JSON"],
      [
        { method: "post", path: "/api/events", headers: json, body: `${"[".repeat(8_000)}${"]".repeat(8_000)}` },
        400,
        "Request body must be a JSON object",
      ],
      [
        { method: "post", path: "/api/events", headers: json, body: `${"[".repeat(10_000)}${"]".repeat(10_000)}` },
        413,
        "Request body is too large",
      ],
      [
        { method: "post", path: "/api/events", headers: { ...key, "content-type": "text/plain" }, body: "hi" },
        415,
        "Content-Type must be application/json",
      ],
      [{ method: "get", path: "/api/events/%ff", headers: key }, 400, "Request path is not valid"],
      [{ method: "put", path: "/api/cronjobs/%E0%A4%A", headers: json, body: "{}" }, 400, "Request path is not valid"],
      [
        { method: "post", path: "/api/events", headers: { ...json, "content-encoding": "gzip" }, body: "{}" },
        400,
        "Request body could not be decoded",
      ],
      [
        { method: "get", path: "/api/events?scheduledStartDate=0000-01-01T00:00:00Z", headers: key },
        400,
        "Invalid date: scheduledStartDate",
      ],
      [
        { method: "get", path: "/api/events?scheduledEndDate=9999-12-31T23:59:59-05:00", headers: key },
        400,
        "Invalid date: scheduledEndDate",
      ],
      [
        { method: "get", path: `/api/events?cursor=${base64url('["+275760-09-13T00:00:00.000Z","x"]')}`, headers: key },
        400,
        INVALID_CURSOR,
      ],
      [
        { method: "get", path: `/api/events?cursor=${base64url('["0000-01-01T00:00:00.000Z","x"]')}`, headers: key },
        400,
        INVALID_CURSOR,
      ],
      [{ method: "get", path: `/api/events?cursor=${base64url("[1,")}`, headers: key }, 400, INVALID_CURSOR],
      [
        // A lone surrogate as the id: Postgres cannot hold it.
        {
          method: "get",
          path: `/api/events?cursor=${base64url('["1970-01-01T00:00:00.000Z","\\ud800"]')}`,
          headers: key,
        },
        400,
        INVALID_CURSOR,
      ],
      [{ method: "get", path: "/api/stats?to=0001-01-01T05:00:00Z", headers: key }, 400, FROM_REQUIRED],
      [
        { method: "get", path: "/api/stats?from=0001-01-01T00:00:00Z&to=0001-01-01T05:00:00Z", headers: key },
        200,
        undefined,
      ],
      [{ method: "get", path: "/api/nowhere", headers: key }, 404, "Not found"],
    ];
    for (const [req, status, message] of cases) {
      const outcome = await sendAndCheck(api, req);
      expect({ path: req.path, status: outcome.status, body: message === undefined ? "" : outcome.json }).toEqual({
        path: req.path,
        status,
        body: message === undefined ? "" : { message },
      });
    }
  });

  it(
    "Idempotency-Key values never break a create",
    () =>
      fc.assert(
        fc.asyncProperty(headerText, async (idempotencyKey) => {
          const outcome = await sendAndCheck(api, {
            method: "post",
            path: "/api/events",
            headers: {
              "x-api-key": api.org.apiKey,
              "content-type": "application/json",
              "idempotency-key": idempotencyKey,
            },
            body: JSON.stringify({
              payload: "k",
              destination: "https://example.com/k",
              scheduledTime: "2030-06-01T00:00:00Z",
            }),
          });
          // A value the other properties of this file already sent with another body is the
          // documented conflict (contract §3), not a broken create.
          if (outcome.status === 422) expect(outcome.json).toEqual({ message: IDEMPOTENCY_KEY_REUSED });
          else expect([200, 400, 403]).toContain(outcome.status);
        }),
        { numRuns: RUNS },
      ),
    TIMEOUT,
  );
});
