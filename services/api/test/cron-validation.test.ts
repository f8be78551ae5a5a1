import { refusedDestinationMessage } from "@punctual/core";
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

// Every client error of the cron jobs API answers with its status and exactly `{message}`.

const EXPRESSION = "Please enter a valid cron expression";
const TIMEZONE = "Please enter a valid timezone";
const STATUS = "'status' must be one of 'Active' or 'Disabled'";
const AT_LEAST_ONE = "At least one of 'payload', 'destination', 'expression', 'timezone' or 'status' is required";
const FLOW_KEY = "'flowKey' must be 1 to 64 characters of letters, digits, '.', '_', ':' or '-'";
const EITHER = "Give either 'expression' or 'every'";
const valid = { payload: '{"hello":"world"}', destination: "https://example.com/hook", expression: "*/5 * * * *" };

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;

beforeAll(async () => {
  // Well over 100 requests a minute on one key: the rate limit is not what this file tests.
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "10000" });
  app = createApp(createTestApiDeps(context).deps);
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

const post = (body: unknown) => {
  const call = request(app).post("/api/cronjobs").set("x-api-key", org.apiKey);
  return body === undefined ? call : call.send(body as object);
};
const put = (id: string, body?: unknown) => {
  const call = request(app).put(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey);
  return body === undefined ? call : call.send(body as object);
};
const remove = (id: string) => request(app).delete(`/api/cronjobs/${id}`).set("x-api-key", org.apiKey);

async function expectError(call: PromiseLike<request.Response>, status: number, message: string) {
  const response = await call;
  expect({ status: response.status, body: response.body }).toEqual({ status, body: { message } });
  expect(response.headers["content-type"]).toBe("application/json; charset=utf-8");
}

/** Creates a job that must succeed, and deletes it again so the file stays under the limit of 3. */
async function expectCreated(body: Record<string, unknown>) {
  const response = await post(body);
  expect(response.status).toBe(200);
  expect((await remove(response.body.id)).status).toBe(204);
  return response.body as Record<string, unknown>;
}

describe("POST /api/cronjobs refuses a bad body", () => {
  it("names a missing field", async () => {
    for (const field of ["payload", "destination"] as const) {
      const { [field]: _omitted, ...rest } = valid;
      await expectError(post(rest), 400, `'${field}' is required`);
    }
    // An expression or an interval (contract §10.4).
    const { expression: _expression, ...withoutExpression } = valid;
    await expectError(post(withoutExpression), 400, EITHER);
    await expectError(post(undefined), 400, "Request body is required");
    await expectError(post([valid]), 400, "Request body must be a JSON object");
  });

  it("names an unknown field, even when it hides a required one", async () => {
    await expectError(post({ ...valid, extra: 1 }), 400, "Unknown field 'extra'");
    await expectError(post({ ...valid, timeZone: "UTC" }), 400, "Unknown field 'timeZone'");
    await expectError(post({ ...valid, status: "Active" }), 400, "Unknown field 'status'");
    const { expression, ...rest } = valid;
    await expectError(post({ ...rest, cron: expression }), 400, "Unknown field 'cron'");
  });

  it("refuses anything but five (or six, seconds first) standard cron fields", async () => {
    for (const expression of [
      "0 0 * * * * *", // seven fields
      "60 0 * * * *", // a sixth field's second out of range
      "* * * *", // four
      "@daily",
      "@every 5m",
      "60 * * * *",
      "0 24 * * *",
      "0 0 32 * *",
      "0 0 * 13 *",
      "0 0 * * 8",
      "0 0 L * *",
      "0 0 * * 5L",
      "0 0 15W * *",
      "0 0 * * 1#2",
      "0 0 ? * *",
      "*/0 * * * *",
      "0 0 * * monday",
      "0 0 * MON *", // a day's name in the month field
      "0 0 * SAT *",
      "0 0 * * JAN", // a month's name in the day-of-week field
      "0 0 JAN * *",
      "",
      "   ",
      "not a cron",
    ]) {
      await expectError(post({ ...valid, expression }), 400, EXPRESSION);
    }
  });

  it("refuses an expression that never fires with its own sentence, at create and edit", async () => {
    const created = await post(valid);
    expect(created.status).toBe(200);
    try {
      for (const expression of ["0 0 30 2 *", "0 0 31 4,6 *", "0 0 31 11 *", "15 8  30-31 FEB *"]) {
        const message = `Cron expression never fires: ${expression.split(/\s+/).join(" ")}`;
        await expectError(post({ ...valid, expression }), 400, message);
        await expectError(put(created.body.id, { expression }), 400, message);
      }
      // A day of the week makes it fire on those days; a 29th of February fires in leap years.
      for (const expression of ["0 0 30 2 MON", "0 0 29 2 *"]) {
        expect((await put(created.body.id, { expression })).status).toBe(200);
      }
      // Bad syntax keeps the contract's sentence.
      await expectError(post({ ...valid, expression: "0 0 32 2 *" }), 400, EXPRESSION);
    } finally {
      expect((await remove(created.body.id)).status).toBe(204);
    }
  });

  it("gives the same sentence for an expression that is not a string", async () => {
    for (const expression of [5, null, true, ["* * * * *"], { minute: "*" }]) {
      await expectError(post({ ...valid, expression }), 400, EXPRESSION);
    }
  });

  it("accepts ranges, lists, steps and names", async () => {
    for (const expression of ["0 9 * * MON-FRI", "0,30 8-18/2 1,15 JAN-JUN,DEC *", "0 0 * * 7", "5 4 * * sun"]) {
      const created = await expectCreated({ ...valid, expression });
      expect(created.expression).toBe(expression);
    }
  });

  it("refuses an unknown timezone", async () => {
    for (const timezone of ["Mars/Olympus", "", " UTC", "UTC+5", "local", 5, null]) {
      await expectError(post({ ...valid, timezone }), 400, TIMEZONE);
    }
  });

  it("takes UTC when no timezone is given, and keeps the one given", async () => {
    expect((await expectCreated(valid)).timezone).toBe("UTC");
    expect((await expectCreated({ ...valid, timezone: "Australia/Sydney" })).timezone).toBe("Australia/Sydney");
  });

  it("applies the events API's payload rules, counting UTF-8 bytes", async () => {
    const exact = `${"€".repeat(341)}a`; // 1024 bytes in 342 characters
    expect(Buffer.byteLength(exact)).toBe(1024);
    expect((await expectCreated({ ...valid, payload: exact })).payload).toBe(exact);
    await expectError(post({ ...valid, payload: `${exact}a` }), 400, "Payload must be at most 1024 bytes");
    await expectError(post({ ...valid, payload: "€".repeat(342) }), 400, "Payload must be at most 1024 bytes");
    await expectError(
      post({ ...valid, payload: "a\u0000b" }),
      400,
      "Payload must be valid UTF-8 text without NUL characters",
    );
    await expectError(post({ ...valid, payload: { hello: "world" } }), 400, "'payload' must be a string");
  });

  it("uses the configured payload limit in its message", async () => {
    const { deps } = createTestApiDeps(context);
    const small = createApp({ ...deps, config: { ...deps.config, MAX_PAYLOAD_BYTES: 10 } });
    await expectError(
      request(small)
        .post("/api/cronjobs")
        .set("x-api-key", org.apiKey)
        .send({ ...valid, payload: "12345678901" }),
      400,
      "Payload must be at most 10 bytes",
    );
  });

  it("applies the events API's destination rules", async () => {
    for (const destination of ["ftp://example.com/x", "example.com/hook", "/hook", "javascript:alert(1)", ""]) {
      await expectError(post({ ...valid, destination }), 400, "Destination must be an http or https URL");
    }
    await expectError(
      post({ ...valid, destination: `https://example.com/${"a".repeat(2048)}` }),
      400,
      "Destination must be at most 2048 characters",
    );
    await expectError(post({ ...valid, destination: 42 }), 400, "'destination' must be a string");
  });

  it("refuses at create and edit the URLs the parser would repair, as the worker does", async () => {
    // Its own organization: this file's key is already near the per-minute rate limit.
    const own = await createTestOrganization(context);
    const send = (call: request.Test, body: object) => call.set("x-api-key", own.apiKey).send(body);
    const created = await send(request(app).post("/api/cronjobs"), valid);
    expect(created.status).toBe(200);
    for (const destination of ["http:///example.com/x", "https://\\example.com/x"]) {
      const message = "Destination must be an http or https URL";
      await expectError(send(request(app).post("/api/cronjobs"), { ...valid, destination }), 400, message);
      await expectError(send(request(app).put(`/api/cronjobs/${created.body.id}`), { destination }), 400, message);
    }
  });

  it("refuses a literal private address unless private destinations are allowed", async () => {
    const { deps } = createTestApiDeps(context);
    const strict = createApp({ ...deps, config: { ...deps.config, ALLOW_PRIVATE_DESTINATIONS: false } });
    const create = (destination: string) =>
      request(strict)
        .post("/api/cronjobs")
        .set("x-api-key", org.apiKey)
        .send({ ...valid, destination });
    await expectError(create("http://127.0.0.1:8080/hook"), 400, refusedDestinationMessage("127.0.0.1"));
    await expectError(create("http://169.254.169.254/latest"), 400, refusedDestinationMessage("169.254.169.254"));
    // This file's own app allows them, as the test suite and local development do.
    expect((await expectCreated({ ...valid, destination: "http://127.0.0.1:8080/hook" })).destination).toBe(
      "http://127.0.0.1:8080/hook",
    );
  });

  it("refuses a flowKey that is not 1 to 64 letters, digits, '.', '_', ':' or '-', and accepts one that is", async () => {
    for (const flowKey of ["", "k".repeat(65), "a b", "a/b", 42, null, ["a"]]) {
      await expectError(post({ ...valid, flowKey }), 400, FLOW_KEY);
    }
    expect((await expectCreated({ ...valid, flowKey: "reports:weekly" })).flowKey).toBe("reports:weekly");
  });

  it("refuses malformed JSON like every route", async () => {
    await expectError(
      request(app).post("/api/cronjobs").set("x-api-key", org.apiKey).set("content-type", "application/json").send("{"),
      400,
      "Request body is not valid JSON",
    );
  });
});

describe("PUT /api/cronjobs/:cronJobId refuses a bad body", () => {
  let cronJobId: string;
  beforeAll(async () => {
    cronJobId = (await post(valid)).body.id;
  });

  it("needs at least one change", async () => {
    await expectError(put(cronJobId, {}), 400, AT_LEAST_ONE);
    await expectError(put(cronJobId), 400, AT_LEAST_ONE);
  });

  it("only takes Active or Disabled as status", async () => {
    for (const status of ["Paused", "active", "DISABLED", "Cancelled", "", 1, null, true]) {
      await expectError(put(cronJobId, { status }), 400, STATUS);
    }
  });

  it("applies the create rules to each field", async () => {
    await expectError(put(cronJobId, { colour: "red" }), 400, "Unknown field 'colour'");
    await expectError(put(cronJobId, { id: cronJobId, payload: "x" }), 400, "Unknown field 'id'");
    await expectError(put(cronJobId, { expression: "0 0 * * * * *" }), 400, EXPRESSION);
    await expectError(put(cronJobId, { expression: "@daily" }), 400, EXPRESSION);
    // null clears the expression (contract §10.4): the job would have neither it nor an interval.
    await expectError(put(cronJobId, { expression: null }), 400, EITHER);
    await expectError(put(cronJobId, { timezone: "Mars/Olympus" }), 400, TIMEZONE);
    await expectError(put(cronJobId, { payload: "x".repeat(1025) }), 400, "Payload must be at most 1024 bytes");
    await expectError(put(cronJobId, { destination: "mailto:a@b.c" }), 400, "Destination must be an http or https URL");
    await expectError(put(cronJobId, { payload: 7 }), 400, "'payload' must be a string");
    for (const flowKey of ["", "k".repeat(65), "a b", 42]) {
      await expectError(put(cronJobId, { flowKey }), 400, FLOW_KEY);
    }
  });

  it("changes nothing when refused", async () => {
    const get = () => request(app).get(`/api/cronjobs/${cronJobId}`).set("x-api-key", org.apiKey);
    const before = (await get()).body;
    // One refused edit of each field (and of the status), each with a valid change beside it that
    // must not be applied either.
    const change = { payload: '{"changed":true}' };
    await expectError(put(cronJobId, { ...change, expression: "@daily" }), 400, EXPRESSION);
    await expectError(put(cronJobId, { ...change, timezone: "Mars/Olympus" }), 400, TIMEZONE);
    await expectError(put(cronJobId, { ...change, status: "Paused" }), 400, STATUS);
    await expectError(put(cronJobId, { ...change, colour: "red" }), 400, "Unknown field 'colour'");
    await expectError(
      put(cronJobId, { expression: "0 * * * *", destination: "mailto:a@b.c" }),
      400,
      "Destination must be an http or https URL",
    );
    await expectError(
      put(cronJobId, { destination: "https://example.com/other", payload: 7 }),
      400,
      "'payload' must be a string",
    );
    await expectError(put(cronJobId, { ...change, flowKey: "a b" }), 400, FLOW_KEY);

    const after = await get();
    expect(after.status).toBe(200);
    expect(after.body).toEqual(before);
    expect(after.body).toMatchObject({ ...valid, status: "Active", timezone: "UTC" });
    expect(after.body.updatedAt).toBe(after.body.createdAt);
  });
});

describe("unknown cron jobs", () => {
  it("answers 404 on get, edit and delete", async () => {
    const message = "Unable to find cron job";
    await expectError(request(app).get("/api/cronjobs/cron_missing").set("x-api-key", org.apiKey), 404, message);
    await expectError(put("cron_missing", { status: "Disabled" }), 404, message);
    await expectError(remove("cron_missing"), 404, message);
  });

  it("needs the API key", async () => {
    await expectError(request(app).get("/api/cronjobs"), 401, "Missing API key");
    await expectError(request(app).post("/api/cronjobs").send(valid), 401, "Missing API key");
  });
});
