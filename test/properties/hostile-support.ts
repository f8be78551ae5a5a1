import { type Clock, fixedClock } from "@punctual/core";
import fc from "fast-check";
import request from "supertest";
import { expect } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { startLiveApi } from "../support/live-api.ts";

// Shared by the hostile-input property suites: a real API on a real port over a real database, a
// snapshot of everything a request could write, the checks every answer must pass, and the
// generators of hostile requests.

export const NOW = new Date("2030-01-10T12:00:00.000Z");
export const ADMIN_TOKEN = "hi-Tg6wN2vLp9Xr4Kq8Bz";

export interface HostileApi {
  base: string;
  context: TestContext;
  clock: Clock;
  org: TestOrganization;
  /** Another organization: its records must stay out of reach. */
  other: TestOrganization;
  revokedKey: string;
  /** A Pending event and a cron job of `org`, and a Pending event of `other`. */
  eventId: string;
  cronJobId: string;
  otherEventId: string;
  close(): Promise<void>;
}

/** Starts the API on a free port with a standing clock, two organizations and a few records. */
export async function startHostileApi(overrides: Record<string, string> = {}): Promise<HostileApi> {
  const context = await createTestContext({
    // The property runs send thousands of requests, wrong admin tokens among them: the limiters are
    // tested elsewhere.
    RATE_LIMIT_PER_MINUTE: "100000000",
    ADMIN_AUTH_FAILURES_PER_MINUTE: "100000000",
    ADMIN_TOKEN,
    ...overrides,
  });
  const clock = fixedClock(NOW);
  const { baseUrl: base } = await startLiveApi(context, clock);
  const org = await createTestOrganization(context, "Hostile");
  const other = await createTestOrganization(context, "Bystander");

  const revoked = await request(base)
    .post(`/api/admin/organizations/${org.orgId}/keys`)
    .set("authorization", `Bearer ${ADMIN_TOKEN}`)
    .send({});
  await request(base)
    .post(`/api/admin/keys/${revoked.body.keyId}/revoke`)
    .set("authorization", `Bearer ${ADMIN_TOKEN}`);

  const event = (key: string) =>
    request(base)
      .post("/api/events")
      .set("x-api-key", key)
      .send({ payload: "seed", destination: "https://example.com/hook", scheduledTime: "2030-02-01T00:00:00Z" });
  const eventId: string = (await event(org.apiKey)).body.id;
  const otherEventId: string = (await event(other.apiKey)).body.id;
  const cronJobId: string = (
    await request(base)
      .post("/api/cronjobs")
      .set("x-api-key", org.apiKey)
      .send({ payload: "seed", destination: "https://example.com/cron", expression: "0 0 1 1 *" })
  ).body.id;
  expect([eventId, otherEventId, cronJobId].every((id) => typeof id === "string")).toBe(true);

  return {
    base,
    context,
    clock,
    org,
    other,
    revokedKey: revoked.body.apiKey,
    eventId,
    cronJobId,
    otherEventId,
    close: () => context.close(),
  };
}

/**
 * Everything a refused request must leave as it was: the rows and content of the tables a request
 * can write, and the quota counters. (`api_keys.last_used_at` is left out: it is bookkeeping of a
 * valid key, written even when the request is then refused.)
 */
export async function snapshot(context: TestContext): Promise<string> {
  const [row] = await context.db.$queryRaw<{ snapshot: string }[]>`
    SELECT json_build_object(
      'events', (SELECT count(*) FROM events),
      'eventsDigest', (SELECT md5(coalesce(string_agg(concat_ws('|', id, org_id, status, payload, destination,
          scheduled_time, updated_at, sent_at, failed_at, idempotency_key), ',' ORDER BY id), '')) FROM events),
      'usage', (SELECT coalesce(sum(count), 0) FROM event_monthly_usage),
      'usageDigest', (SELECT md5(coalesce(string_agg(concat_ws('|', org_id, month, count), ',' ORDER BY org_id, month), ''))
          FROM event_monthly_usage),
      'cronJobs', (SELECT count(*) FROM cron_jobs),
      'cronJobsDigest', (SELECT md5(coalesce(string_agg(concat_ws('|', id, org_id, status, payload, destination,
          expression, timezone, updated_at), ',' ORDER BY id), '')) FROM cron_jobs),
      'cronRuns', (SELECT count(*) FROM cron_runs),
      'attempts', (SELECT count(*) FROM event_attempts),
      'accounts', (SELECT count(*) FROM accounts),
      'organizations', (SELECT md5(coalesce(string_agg(concat_ws('|', id, name, owner_id, signing_secret), ',' ORDER BY id), ''))
          FROM organizations),
      'memberships', (SELECT count(*) FROM memberships),
      'apiKeys', (SELECT md5(coalesce(string_agg(concat_ws('|', id, org_id, hash, revoked_at), ',' ORDER BY id), ''))
          FROM api_keys)
    )::text AS snapshot`;
  return row?.snapshot ?? "";
}

/** Internal words that must never reach a client in an error message. */
const LEAKS = /prisma|postgres|\bsql|node_modules|\bat \S+:\d+|ECONN|TypeError|ReferenceError|URIError|\[object/i;

/** A message without the parts that echo the client's own input (a field name, a status value). */
const withoutEcho = (message: string) =>
  message.replace(/'.*'/s, "''").replace(/^(Invalid status|Invalid date): .*/s, "$1");

export interface HostileRequest {
  method: "get" | "post" | "put" | "delete" | "patch";
  path: string;
  headers: Record<string, string>;
  /** A string or raw bytes; absent for no body. */
  body?: string | Buffer | undefined;
}

export interface Outcome {
  status: number;
  /** The parsed JSON body, or undefined when there is none. */
  json: unknown;
}

/** Sends one request exactly as described. */
export async function send(base: string, req: HostileRequest): Promise<request.Response> {
  let call = request(base)[req.method](req.path);
  for (const [name, value] of Object.entries(req.headers)) call = call.set(name, value);
  // No parsing on our side: the raw text is checked below.
  call = call.buffer(true).parse((res, done) => {
    let text = "";
    res.setEncoding("utf8");
    res.on("data", (chunk: string) => {
      text += chunk;
    });
    res.on("end", () => done(null, text));
  });
  return req.body === undefined ? call : call.send(req.body);
}

/**
 * The rules of contract §1 for any answer: never a 5xx; an error is JSON that is exactly
 * `{ "message": "<one sentence>" }` with nothing internal in it; when it is an error, nothing was
 * written. Returns the parsed outcome for further checks.
 */
export function checkAnswer(response: request.Response, before: string, after: string): Outcome {
  const status = response.status;
  const text = typeof response.body === "string" ? response.body : "";
  expect(status, `status ${status}: ${text.slice(0, 200)}`).toBeLessThan(500);
  let json: unknown;
  if (text !== "") {
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    json = JSON.parse(text);
  }
  if (status >= 400) {
    expect(json, `body of a ${status}`).toBeTypeOf("object");
    expect(Object.keys(json as object)).toEqual(["message"]);
    const message = (json as { message: unknown }).message;
    expect(message).toBeTypeOf("string");
    expect((message as string).length).toBeGreaterThan(0);
    expect(withoutEcho(message as string)).not.toMatch(LEAKS);
    expect(after, `a refused request (${status} ${message}) wrote something`).toBe(before);
  }
  return { status, json };
}

/** Sends a request and checks the answer, with a snapshot on each side. */
export async function sendAndCheck(api: HostileApi, req: HostileRequest): Promise<Outcome> {
  const before = await snapshot(api.context);
  const response = await send(api.base, req);
  return checkAnswer(response, before, await snapshot(api.context));
}

// ---------------------------------------------------------------------------------------------
// Generators

const loneSurrogate = fc.constantFrom("\ud800", "\udbff\u0041", "\udfff");
/** Text of any kind: ASCII, any code point, control characters, lone surrogates, NUL. */
export const anyText = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "binary-ascii", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 20 }),
  fc.tuple(fc.string({ maxLength: 5 }), loneSurrogate, fc.string({ maxLength: 5 })).map((parts) => parts.join("")),
  fc.constant("\u0000"),
  fc.constantFrom(
    "",
    " ",
    "null",
    "undefined",
    "NaN",
    "__proto__",
    "constructor",
    "toString",
    "<script>",
    "' OR 1=1 --",
  ),
);

/** A long string (1 to ~20 kB), to hit the payload and body limits. */
export const hugeText = fc
  .tuple(fc.string({ minLength: 1, maxLength: 4 }), fc.integer({ min: 256, max: 6_000 }))
  .map(([unit, times]) => unit.repeat(times));

/** Any JSON value, with the keys objects tend to be attacked with. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.dictionary(
    fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty"),
    fc.jsonValue(),
    {
      maxKeys: 2,
    },
  ),
  fc.constantFrom(null, true, 0, -1, 1e308, "", [], {}),
);

/** Values of the wrong type (or the right type with a wrong value) for a string field. */
export const fieldValue = fc.oneof(
  anyText,
  hugeText,
  anyJson,
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.string(), { maxLength: 3 }),
);

/** A body nested `depth` levels deep (arrays or objects), as JSON text. */
export const deeplyNested = fc
  .tuple(fc.integer({ min: 500, max: 12_000 }), fc.boolean(), fc.constantFrom("", '{"payload":', '{"destination":'))
  .map(([depth, arrays, prefix]) => {
    const open = arrays ? "[" : '{"a":';
    const close = arrays ? "]" : "}";
    return `${prefix}${open.repeat(depth)}1${close.repeat(depth)}${prefix === "" ? "" : "}"}`;
  });

/** Header values Node can send: tab, printable ASCII and Latin-1 (Node refuses the rest). */
export const headerText = fc.oneof(
  fc.string({
    unit: fc.constantFrom(..."\t !\"#%&'()*+,-./0123456789:;<=>?@AZaz[\\]^_`{|}~\u00a0\u00e9\u00ff".split("")),
  }),
  fc.string({ maxLength: 300 }).map((text) => text.replace(/[^\t\x20-\x7e]/g, "")),
  fc.integer({ min: 200, max: 400 }).map((n) => "k".repeat(n)),
  fc.constantFrom("", " ", "null", "pk_", "Bearer", "\u00ff\u00fe"),
);

export const contentType = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("application/json", "application/json; charset=utf-8") },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "application/json; charset=utf-16",
      "application/json; charset=latin1",
      "application/json; charset=",
      "application/vnd.api+json",
      "application/JSON",
      "text/plain",
      "text/html",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=xyz",
      "application/xml",
      "*/*",
      "application",
      ";",
    ),
  },
  { weight: 1, arbitrary: headerText },
);

/** A JSON body, broken JSON, or raw bytes. */
export const bodyText = fc.oneof(
  { weight: 4, arbitrary: anyJson.map((value) => JSON.stringify(value) ?? "null") },
  { weight: 2, arbitrary: deeplyNested },
  { weight: 1, arbitrary: hugeText.map((text) => JSON.stringify({ payload: text })) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("{", "}", '{"a":}', "[1,]", "NaN", "undefined", "{'a':1}", '{"a":1}garbage', "\u0000"),
  },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 100 }) },
);

/** Percent-encodes raw bytes (including ones that are not UTF-8). */
const percentBytes = fc
  .uint8Array({ minLength: 1, maxLength: 12 })
  .map((bytes) => [...bytes].map((b) => `%${b.toString(16).padStart(2, "0")}`).join(""));

/** Ids as a client could put them in a path: garbage, traversal, encodings, very long. */
export function hostileId(real: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(...real),
    fc.string({ unit: "binary", minLength: 1, maxLength: 30 }).map((text) => encodeURIComponent(text)),
    fc.string({ unit: "grapheme", minLength: 1, maxLength: 10 }).map((text) => encodeURIComponent(text)),
    percentBytes,
    // Printable ASCII except what would end the path ('?', '#') or be refused by Node (space).
    fc.string({ minLength: 1, maxLength: 30 }).map((text) => text.replace(/[?# ]/g, "") || "x"),
    fc.constantFrom(
      "..",
      "../..",
      "..%2f..%2fadmin",
      "%2e%2e",
      "%2e%2e%2f%2e%2e",
      ".",
      "%00",
      "%",
      "%zz",
      "%ff",
      "%c0%ae",
      "%E0%A4%A",
      "null",
      "__proto__",
      "constructor",
      "evt_",
      "cron_",
      "evt_00000000000000000000000000",
    ),
    fc.integer({ min: 300, max: 6_000 }).map((n) => "a".repeat(n)),
    fc.constant(real[0] ?? "x").map((id) => id.toUpperCase()),
  );
}

/** The `x-api-key` header: mostly the valid key (so requests reach the handlers), sometimes not. */
export function apiKeyHeader(api: HostileApi): fc.Arbitrary<Record<string, string>> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant({ "x-api-key": api.org.apiKey }) },
    { weight: 1, arbitrary: fc.constant({}) },
    { weight: 1, arbitrary: fc.constant({ "x-api-key": api.revokedKey }) },
    { weight: 1, arbitrary: headerText.map((key) => ({ "x-api-key": key })) },
    { weight: 1, arbitrary: fc.constant({ "x-api-key": `${api.org.apiKey}x` }) },
  );
}

/** Hostile extra headers: content type, idempotency key, request id, encodings. */
const hostileHeaders: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      "content-type": contentType,
      "idempotency-key": headerText,
      "x-request-id": headerText,
      "content-encoding": fc.constantFrom("gzip", "deflate", "br", "identity", "zstd", "gzip, br"),
      accept: fc.constantFrom("text/html", "application/xml", "*/*"),
    },
    { requiredKeys: [] },
  )
  .map((headers) => Object.fromEntries(Object.entries(headers).filter(([, value]) => value !== undefined)));

/** Extra headers: mostly a plain JSON content type (so bodies reach validation), else hostile ones. */
export const extraHeaders: fc.Arbitrary<Record<string, string>> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ "content-type": "application/json" }) },
  { weight: 2, arbitrary: hostileHeaders },
);

/** Mostly one of the near-valid values, sometimes anything. */
const mostly = <T>(values: T[]) =>
  fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...values) }, { weight: 1, arbitrary: fieldValue });

/** Near-valid values of the events and cron jobs fields: right and wrong mixed. */
export const nearValid = {
  payload: fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('{"ok":true}', "x", "€".repeat(341), "€".repeat(342), "a\u0000b") },
    { weight: 1, arbitrary: fieldValue },
  ),
  destination: mostly([
    "https://example.com/hook",
    "https://example.com/hook",
    "http://example.org:8080/path?q=1",
    "http://93.184.216.34/hook",
    "http://127.0.0.1:8080/hook",
    "http://[::ffff:127.0.0.1]/",
    "http://169.254.169.254/latest/meta-data",
    "ftp://example.com/x",
    "https://",
    "http:example.com",
    " https://example.com",
    "https://example.com/\u0000",
    "javascript:alert(1)",
    `https://example.com/${"a".repeat(2050)}`,
    "http://[::1",
    "http://user:pass@example.com/",
  ]),
  scheduledTime: fc.oneof(
    {
      weight: 3,
      arbitrary: fc.constantFrom(
        "2030-01-20T00:00:00Z",
        "2030-03-01T00:00:00+02:00",
        "2030-02-15T10:00:00.123456789Z",
        "2030-02-30T00:00:00Z",
        "2030-01-10T12:00:00Z",
        "2029-01-01T00:00:00Z",
        "2031-06-01T00:00:00Z",
        "0000-01-01T00:00:00Z",
        "9999-12-31T23:59:59-05:00",
        "2030-01-20",
        "2030-01-20T00:00:00",
        "tomorrow",
        "1893456000000",
      ),
    },
    {
      weight: 2,
      arbitrary: fc
        .date({ min: new Date("2029-12-01T00:00:00Z"), max: new Date("2031-02-01T00:00:00Z"), noInvalidDate: true })
        .map((date) => date.toISOString()),
    },
    { weight: 1, arbitrary: fieldValue },
  ),
  status: mostly(["Cancelled", "Sent", "Pending", "Active", "Disabled", "cancelled", "Failed To Send"]),
  expression: mostly([
    "* * * * *",
    "0 0 1 1 *",
    "*/15 9-17 * * MON-FRI",
    "*/0 * * * *",
    "60 * * * *",
    "0 0 31 2 *",
    "@hourly",
    "* * * * * *",
    "0-59/99999999999999999999 * * * *",
    "",
  ]),
  timezone: mostly(["UTC", "Europe/Paris", "America/New_York", "Etc/GMT+99", "Mars/Olympus", "../../etc/passwd", ""]),
  extra: fc.oneof(fc.constantFrom("__proto__", "constructor", "payloadd", "id", "org"), fc.string({ maxLength: 10 })),
};

/** An object with some of `fields` (near-valid values) and sometimes an unknown one. */
export function nearValidBody(fields: (keyof typeof nearValid)[]): fc.Arbitrary<string> {
  const entries = Object.fromEntries(fields.map((field) => [field, nearValid[field]])) as Record<
    string,
    fc.Arbitrary<unknown>
  >;
  // Edits usually change one field: give that shape its own share, beside any subset of them.
  const oneField = fc.oneof(...fields.map((field) => nearValid[field].map((value) => ({ [field]: value }))));
  return fc
    .tuple(
      fc.oneof(fc.record(entries, { requiredKeys: [] }), oneField),
      // An unknown field in one body of five.
      fc.oneof(
        { weight: 4, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.tuple(nearValid.extra, fieldValue) },
      ),
    )
    .map(([body, extra]) => {
      const object: Record<string, unknown> = { ...body };
      if (extra) Object.defineProperty(object, extra[0], { value: extra[1], enumerable: true });
      return JSON.stringify(object);
    });
}
