import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientAddresses, createProxiedTestContext } from "../../../test/support/client-addresses.ts";
import { createTestApiDeps, type TestContext } from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { createApiMetrics } from "../src/metrics/api-metrics.ts";
import { TOO_MANY_REQUESTS } from "../src/rate-limit/rate-limit.ts";

// While a client address is blocked for failed admin logins, an operator already signed in to the
// console from it kept getting 429 on every admin call. A request whose only credential is the
// operator's session cookie now goes on to its check; every credential that could be a guess (the
// admin token as Bearer or Basic, a sign-in) is still refused with 429, the right one included.

const ADMIN_TOKEN = "sec-Lk3wP8zQv5Tn2Rb7Xm4J";
const FAILURES = 3;
const HOST = "punctual.test";

let context: TestContext;
let app: ReturnType<typeof createApp>;
let metrics: ReturnType<typeof createApiMetrics>;
const newAddress = clientAddresses("203.0.113");

beforeAll(async () => {
  context = await createProxiedTestContext({ ADMIN_TOKEN, ADMIN_AUTH_FAILURES_PER_MINUTE: String(FAILURES) });
  metrics = createApiMetrics({ defaultMetrics: false });
  app = createApp({ ...createTestApiDeps(context).deps, metrics });
});
afterAll(() => context.close());

/** Signs the operator in from `from`; the cookie to send back. */
async function signInOperator(from: string): Promise<string> {
  const response = await request(app)
    .post("/console/api/operator-session")
    .set("x-forwarded-for", from)
    .send({ adminToken: ADMIN_TOKEN });
  expect(response.status).toBe(200);
  const [cookie] = response.headers["set-cookie"] as unknown as string[];
  return (cookie ?? "").split(";")[0] ?? "";
}

/** Wrong tokens on the admin API until `from` is blocked. */
async function block(from: string): Promise<void> {
  for (let n = 0; n < FAILURES; n++) {
    const wrong = await request(app)
      .get("/api/admin/organizations")
      .set("x-forwarded-for", from)
      .set("authorization", `Bearer wrong-${n}`);
    expect(wrong.status).toBe(401);
  }
  const refused = await request(app)
    .get("/api/admin/organizations")
    .set("x-forwarded-for", from)
    .set("authorization", `Bearer ${ADMIN_TOKEN}`);
  expect(refused.status).toBe(429);
}

/** Failed admin logins counted on the admin API so far. */
const failures = async () =>
  (await metrics.adminAuthFailures.get()).values.find((value) => value.labels.surface === "admin_api")?.value ?? 0;

const admin = (from: string) => ({
  get: (path: string) => request(app).get(path).set("x-forwarded-for", from),
  post: (path: string) => request(app).post(path).set("x-forwarded-for", from).set("host", HOST),
});

describe("a blocked client address", () => {
  it("still serves the operator's console session, reads and changes alike", async () => {
    const from = newAddress();
    const cookie = await signInOperator(from);
    await block(from);

    const listed = await admin(from).get("/api/admin/organizations").set("cookie", cookie);
    expect({ status: listed.status, isList: Array.isArray(listed.body) }).toEqual({ status: 200, isList: true });
    const created = await admin(from)
      .post("/api/admin/accounts")
      .set("cookie", cookie)
      .set("origin", `http://${HOST}`)
      .send({ email: "during-block@example.com" });
    expect(created.status).toBe(201);
    const health = await admin(from).get("/api/admin/service-health").set("cookie", cookie);
    expect(health.status).toBe(200);
  });

  it("still refuses every credential that could be a guess, the right one included, with 429", async () => {
    const from = newAddress();
    const cookie = await signInOperator(from);
    await block(from);
    const basic = `Basic ${Buffer.from(`operator:${ADMIN_TOKEN}`).toString("base64")}`;

    const answers = {
      bearer: await admin(from).get("/api/admin/organizations").set("authorization", `Bearer ${ADMIN_TOKEN}`),
      // The header wins over the cookie, as it does for the check itself.
      "bearer beside the cookie": await admin(from)
        .get("/api/admin/organizations")
        .set("cookie", cookie)
        .set("authorization", `Bearer ${ADMIN_TOKEN}`),
      "no credentials": await admin(from).get("/api/admin/organizations"),
      "the dashboard": await admin(from).get("/admin/queues/api/queues").set("authorization", basic),
      "the dashboard beside the cookie": await admin(from)
        .get("/admin/queues/api/queues")
        .set("cookie", cookie)
        .set("authorization", basic),
      "the operator's sign-in": await admin(from)
        .post("/console/api/operator-session")
        .set("cookie", cookie)
        .send({ adminToken: ADMIN_TOKEN }),
    };
    for (const [label, response] of Object.entries(answers)) {
      expect({ label, status: response.status, body: response.body }).toEqual({
        label,
        status: 429,
        body: { message: TOO_MANY_REQUESTS },
      });
      expect(Number(response.headers["retry-after"]), label).toBeGreaterThan(0);
    }
  });

  it("answers a cookie without a live session as without the block (401), and counts it as no failure", async () => {
    const from = newAddress();
    await block(from);
    const before = await failures();
    const stale = await admin(from)
      .get("/api/admin/organizations")
      .set("cookie", `punctual_session=${"x".repeat(43)}`);
    expect({ status: stale.status, body: stale.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
    expect(await failures()).toBe(before);
    // The block itself stands for the token.
    const refused = await admin(from).get("/api/admin/organizations").set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(refused.status).toBe(429);
  });
});
