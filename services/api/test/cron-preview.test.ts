import { fixedClock } from "@punctual/core";
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

// GET /api/cron-jobs/preview: the next times of an expression, as the scheduler would fire it.

// A Wednesday; Europe/Paris moves from UTC+1 to UTC+2 on Sunday, March 28th 2027.
const NOW = new Date("2027-03-24T12:00:00.000Z");

let context: TestContext;
let app: ReturnType<typeof createApp>;
let org: TestOrganization;

beforeAll(async () => {
  context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "10000" });
  app = createApp(createTestApiDeps(context, fixedClock(NOW)).deps);
  org = await createTestOrganization(context);
});
afterAll(() => context.close());

const preview = (query: Record<string, string>) =>
  request(app).get("/api/cron-jobs/preview").query(query).set("x-api-key", org.apiKey);

/** The firings of a job without maxRuns or jitter: each a run, sent at its firing (contract §10.4). */
const firingsOf = (times: string[]) => times.map((at, index) => ({ at, run: index + 1, sendFrom: at, sendUntil: at }));

async function expectError(query: Record<string, string>, message: string) {
  const response = await preview(query);
  expect({ query, status: response.status, body: response.body }).toEqual({ query, status: 400, body: { message } });
}

describe("GET /api/cron-jobs/preview", () => {
  it("answers under every spelling of the cron jobs path, as the collection does", async () => {
    const query = { expression: "0 9 * * 1-5", timezone: "Europe/Paris", count: "2" };
    const answers = await Promise.all(
      ["/api/cron-jobs/preview", "/api/cronjobs/preview", "/api/cronJobs/preview"].map(async (path) => {
        const response = await request(app).get(path).query(query).set("x-api-key", org.apiKey);
        return { path, status: response.status, times: response.body.times };
      }),
    );
    const times = ["2027-03-25T08:00:00.000Z", "2027-03-26T08:00:00.000Z"];
    expect(answers).toEqual([
      { path: "/api/cron-jobs/preview", status: 200, times },
      { path: "/api/cronjobs/preview", status: 200, times },
      { path: "/api/cronJobs/preview", status: 200, times },
    ]);
    const list = await request(app).get("/api/cron-jobs").set("x-api-key", org.apiKey);
    expect({ status: list.status, body: list.body }).toEqual({ status: 200, body: [] });
  });

  it("answers the next five weekday mornings in Paris across the change to summer time", async () => {
    const response = await preview({ expression: "0 9 * * 1-5", timezone: "Europe/Paris" });
    expect(response.status).toBe(200);
    const times = [
      "2027-03-25T08:00:00.000Z",
      "2027-03-26T08:00:00.000Z",
      // 09:00 in Paris is 07:00 UTC from Monday on.
      "2027-03-29T07:00:00.000Z",
      "2027-03-30T07:00:00.000Z",
      "2027-03-31T07:00:00.000Z",
    ];
    expect(response.body).toEqual({
      expression: "0 9 * * 1-5",
      every: null,
      timezone: "Europe/Paris",
      times,
      neverFires: false,
      firings: firingsOf(times),
    });
  });

  it("evaluates in UTC when no timezone is given, and stores the expression's spacing normalized", async () => {
    const response = await preview({ expression: " 30  *  * * * ", count: "3" });
    const times = ["2027-03-24T12:30:00.000Z", "2027-03-24T13:30:00.000Z", "2027-03-24T14:30:00.000Z"];
    expect(response.body).toEqual({
      expression: "30 * * * *",
      every: null,
      timezone: "UTC",
      times,
      neverFires: false,
      firings: firingsOf(times),
    });
  });

  it("answers between 1 and 20 times", async () => {
    expect((await preview({ expression: "* * * * *", count: "1" })).body.times).toEqual(["2027-03-24T12:01:00.000Z"]);
    const twenty = await preview({ expression: "* * * * *", count: "20" });
    expect(twenty.body.times).toHaveLength(20);
    expect(twenty.body.times.at(-1)).toBe("2027-03-24T12:20:00.000Z");
    for (const count of ["0", "21", "-1", "1.5", "five", ""]) {
      await expectError({ expression: "* * * * *", count }, "'count' must be an integer between 1 and 20");
    }
  });

  it("says neverFires, with no times, for an expression no date matches", async () => {
    for (const expression of ["0 0 30 2 *", "0 0 31 4,6 *"]) {
      const response = await preview({ expression });
      expect({ status: response.status, body: response.body }).toEqual({
        status: 200,
        body: { expression, every: null, timezone: "UTC", times: [], neverFires: true, firings: [] },
      });
    }
  });

  it("refuses an invalid expression or timezone with cron job create's own words", async () => {
    const created = async (body: Record<string, string>) => {
      const response = await request(app)
        .post("/api/cronjobs")
        .set("x-api-key", org.apiKey)
        .send({ payload: "{}", destination: "https://example.com/hook", ...body });
      expect(response.status).toBe(400);
      return response.body.message as string;
    };
    for (const expression of ["not a cron", "0 0 32 2 *", "* * * * * * *", "* * * SAT *"]) {
      await expectError({ expression }, await created({ expression }));
    }
    for (const timezone of ["Mars/Olympus", "", " UTC"]) {
      await expectError({ expression: "* * * * *", timezone }, await created({ expression: "* * * * *", timezone }));
    }
    expect(await created({ expression: "not a cron" })).toBe("Please enter a valid cron expression");
    expect(await created({ expression: "* * * * *", timezone: "Mars/Olympus" })).toBe("Please enter a valid timezone");
  });

  it("refuses a missing expression (and interval), a repeated parameter and an unknown one", async () => {
    // An expression or an interval (contract §10.4), as at create.
    await expectError({}, "Give either 'expression' or 'every'");
    await expectError({ expression: "* * * * *", foo: "1" }, "Unknown query parameter 'foo'");
    const repeated = await request(app)
      .get("/api/cron-jobs/preview?expression=*%20*%20*%20*%20*&count=1&count=2")
      .set("x-api-key", org.apiKey);
    expect(repeated.body).toEqual({ message: "Query parameter 'count' must be given only once" });
  });

  it("requires an API key", async () => {
    const response = await request(app).get("/api/cron-jobs/preview?expression=*%20*%20*%20*%20*");
    expect(response.status).toBe(401);
  });
});
