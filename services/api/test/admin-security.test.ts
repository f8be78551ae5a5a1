import { pino } from "pino";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientAddresses, createProxiedTestContext } from "../../../test/support/client-addresses.ts";
import { createTestApiDeps, createTestContext, type TestContext } from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { createApiMetrics } from "../src/metrics/api-metrics.ts";
import { TOO_MANY_REQUESTS } from "../src/rate-limit/rate-limit.ts";

// The admin surfaces under attack: failed logins limited per client address (admin API and Bull
// Board sharing one budget, lowered here to 3 a minute), answers carrying keys or secrets kept out of
// caches, and repeated query parameters refused. The app trusts loopback proxies, so each test
// speaks from its own client address through X-Forwarded-For.

const ADMIN_TOKEN = "sec-Hq4vT8nLw2Zr6Kp9Xs3M";
const FAILURES = 3;
const basic = (password: string) => `Basic ${Buffer.from(`operator:${password}`).toString("base64")}`;

let context: TestContext;
let app: ReturnType<typeof createApp>;
let metrics: ReturnType<typeof createApiMetrics>;
const warnings: Record<string, unknown>[] = [];
const newAddress = clientAddresses("198.51.100");

beforeAll(async () => {
  context = await createProxiedTestContext({ ADMIN_TOKEN, ADMIN_AUTH_FAILURES_PER_MINUTE: String(FAILURES) });
  metrics = createApiMetrics({ defaultMetrics: false });
  const logger = pino({ level: "warn" }, { write: (line: string) => warnings.push(JSON.parse(line)) });
  app = createApp({ ...createTestApiDeps(context).deps, metrics, logger });
});
afterAll(() => context.close());

const adminApi = (from: string, authorization?: string) => {
  const call = request(app).get("/api/admin/organizations").set("x-forwarded-for", from);
  return authorization === undefined ? call : call.set("authorization", authorization);
};
const dashboard = (from: string, authorization?: string) => {
  const call = request(app).get("/admin/queues/api/queues").set("x-forwarded-for", from);
  return authorization === undefined ? call : call.set("authorization", authorization);
};

const failureCount = async (surface: string) =>
  (await metrics.adminAuthFailures.get()).values.find((value) => value.labels.surface === surface)?.value ?? 0;

describe("failed admin logins", () => {
  it("blocks a client on the admin API after ADMIN_AUTH_FAILURES_PER_MINUTE wrong tokens, the right one too", async () => {
    const from = newAddress();
    for (let n = 0; n < FAILURES; n++) {
      const wrong = await adminApi(from, `Bearer wrong-token-${n}`);
      expect(wrong.status).toBe(401);
      expect(wrong.body).toEqual({ message: "Invalid admin token" });
    }
    for (const authorization of ["Bearer wrong-token-again", `Bearer ${ADMIN_TOKEN}`]) {
      const refused = await adminApi(from, authorization);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
      const retryAfter = Number(refused.headers["retry-after"]);
      expect(retryAfter).toBeGreaterThanOrEqual(58);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    // Another client is not affected.
    expect((await adminApi(newAddress(), `Bearer ${ADMIN_TOKEN}`)).status).toBe(200);
  });

  it("blocks a client on Bull Board after wrong Basic credentials, the right ones too", async () => {
    const from = newAddress();
    for (let n = 0; n < FAILURES; n++) expect((await dashboard(from, basic(`wrong-${n}`))).status).toBe(401);
    const refused = await dashboard(from, basic(ADMIN_TOKEN));
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(58);
    expect((await request(app).get("/admin/queues").set("x-forwarded-for", from)).status).toBe(429);
    expect((await dashboard(newAddress(), basic(ADMIN_TOKEN))).status).toBe(200);
  });

  it("counts both surfaces in one budget per client", async () => {
    const from = newAddress();
    expect((await adminApi(from, "Bearer wrong")).status).toBe(401);
    expect((await dashboard(from, basic("wrong"))).status).toBe(401);
    expect((await adminApi(from, "Bearer wrong")).status).toBe(401);
    expect((await dashboard(from, basic(ADMIN_TOKEN))).status).toBe(429);
    expect((await adminApi(from, `Bearer ${ADMIN_TOKEN}`)).status).toBe(429);
  });

  it("does not count requests without credentials (a browser before its login prompt)", async () => {
    const from = newAddress();
    for (let n = 0; n < FAILURES * 2; n++) {
      expect((await dashboard(from)).status).toBe(401);
      expect((await adminApi(from)).status).toBe(401);
    }
    expect((await dashboard(from, basic(ADMIN_TOKEN))).status).toBe(200);
    expect((await adminApi(from, `Bearer ${ADMIN_TOKEN}`)).status).toBe(200);
  });

  it("counts failures in punctual_admin_auth_failures_total and logs a warning when it blocks", async () => {
    const apiBefore = await failureCount("admin_api");
    const dashboardBefore = await failureCount("queue_dashboard");
    const from = newAddress();
    expect((await adminApi(from, "Bearer wrong")).status).toBe(401);
    expect((await adminApi(from, "Bearer wrong")).status).toBe(401);
    expect((await dashboard(from, basic("wrong"))).status).toBe(401);
    // Refused before the comparison: not another failure.
    expect((await adminApi(from, "Bearer wrong")).status).toBe(429);
    expect(await failureCount("admin_api")).toBe(apiBefore + 2);
    expect(await failureCount("queue_dashboard")).toBe(dashboardBefore + 1);

    const scraped = await request(app).get("/metrics");
    expect(scraped.text).toMatch(/^punctual_admin_auth_failures_total\{surface="admin_api"\} \d+$/m);
    const blocked = warnings.filter((line) => line.client === `ip:${from}`);
    expect(blocked).toEqual([
      expect.objectContaining({
        msg: "client blocked after too many failed admin logins",
        surface: "queue_dashboard",
        failures: FAILURES,
        blockSeconds: 60,
      }),
    ]);
  });

  it("lets a blocked client try again once the block has passed", async () => {
    const quick = await createTestContext({
      ADMIN_TOKEN,
      ADMIN_AUTH_FAILURES_PER_MINUTE: "1",
      RATE_LIMIT_BLOCK_SECONDS: "1",
      TRUST_PROXY: "loopback",
    });
    try {
      await quick.redis.ping();
      const quickApp = createApp(createTestApiDeps(quick).deps);
      const from = newAddress();
      const login = (token: string) =>
        request(quickApp)
          .get("/api/admin/organizations")
          .set("x-forwarded-for", from)
          .set("authorization", `Bearer ${token}`);
      expect((await login("wrong")).status).toBe(401);
      const refused = await login(ADMIN_TOKEN);
      expect(refused.status).toBe(429);
      expect(refused.headers["retry-after"]).toBe("1");
      await expect.poll(async () => (await login(ADMIN_TOKEN)).status, { timeout: 5_000 }).toBe(200);
    } finally {
      await quick.close();
    }
  });
});

describe("answers carrying a key or a secret", () => {
  const admin = (method: "get" | "post", path: string) =>
    request(app)[method](path).set("x-forwarded-for", newAddress()).set("authorization", `Bearer ${ADMIN_TOKEN}`);

  it("are never stored: Cache-Control: no-store on every route that returns one", async () => {
    const created = await admin("post", "/api/admin/organizations").send({
      email: `owner-${Date.now()}@example.com`,
      name: "No Store",
    });
    expect(created.status).toBe(201);
    expect(created.body.apiKey).toEqual(expect.any(String));
    expect(created.body.signingSecret).toEqual(expect.any(String));
    expect(created.headers["cache-control"]).toBe("no-store");
    const orgId = created.body.orgId as string;

    const key = await admin("post", `/api/admin/organizations/${orgId}/keys`).send({});
    expect(key.status).toBe(201);
    expect(key.body.apiKey).toEqual(expect.any(String));
    expect(key.headers["cache-control"]).toBe("no-store");
    const keyId = key.body.keyId as string;

    const rotated = await admin("post", `/api/admin/keys/${keyId}/rotate`).send({});
    expect(rotated.status).toBe(200);
    expect(rotated.body.apiKey).toEqual(expect.any(String));
    expect(rotated.headers["cache-control"]).toBe("no-store");

    const secret = await admin("post", `/api/admin/organizations/${orgId}/signing-secret/rotate`).send({});
    expect(secret.status).toBe(200);
    expect(secret.body.signingSecret).toEqual(expect.any(String));
    expect(secret.headers["cache-control"]).toBe("no-store");

    // The other admin answers name people and keys: not kept either.
    const listed = await admin("get", `/api/admin/organizations/${orgId}/keys`);
    expect(listed.status).toBe(200);
    expect(listed.headers["cache-control"]).toBe("no-store");
  });
});

describe("admin API query parameters", () => {
  const list = (query: string) =>
    request(app)
      .get(`/api/admin/organizations${query}`)
      .set("x-forwarded-for", newAddress())
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);

  it("refuses a repeated parameter instead of ignoring the filter", async () => {
    const response = await list("?email=a@example.com&email=b@example.com");
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: "Query parameter 'email' must be given only once" });
  });

  it("refuses an unknown parameter, like the public API", async () => {
    const response = await list("?mail=a@example.com");
    expect(response.status).toBe(400);
    expect(response.body).toEqual({ message: "Unknown query parameter 'mail'" });
  });

  it("still filters by one email", async () => {
    const email = `filter-${Date.now()}@example.com`;
    const created = await request(app)
      .post("/api/admin/organizations")
      .set("x-forwarded-for", newAddress())
      .set("authorization", `Bearer ${ADMIN_TOKEN}`)
      .send({ email, name: "Filtered" });
    expect(created.status).toBe(201);
    const response = await list(`?email=${encodeURIComponent(email)}`);
    expect(response.status).toBe(200);
    expect(JSON.stringify(response.body)).toContain(created.body.orgId);
    const all = await list("");
    expect(all.status).toBe(200);
  });
});
