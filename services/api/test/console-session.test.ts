import { loadConfig, revokeApiKey, rotateApiKey } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientAddresses, createProxiedTestContext } from "../../../test/support/client-addresses.ts";
import {
  createTestApiDeps,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { TOO_MANY_REQUESTS } from "../src/rate-limit/rate-limit.ts";

// The console's sessions: signing in with an API key or the admin token gives a cookie that stands
// for it on the APIs, never the secret; changes made with the cookie must come from this origin.
// The app trusts loopback proxies, so each test speaks from its own client address (and can say
// it came over HTTPS) through X-Forwarded-*.

const ADMIN_TOKEN = "sec-Vb7qN2xLk9Tz4Wm6Pr3J";
const FAILURES = 3;
/** The host the console is served from in these tests, and its origin. */
const HOST = "console.punctual.test";
const ORIGIN = `http://${HOST}`;

let context: TestContext;
let app: ReturnType<typeof createApp>;
let deps: ReturnType<typeof createTestApiDeps>["deps"];
const newAddress = clientAddresses("203.0.113");

beforeAll(async () => {
  context = await createProxiedTestContext({ ADMIN_TOKEN, ADMIN_AUTH_FAILURES_PER_MINUTE: String(FAILURES) });
  deps = createTestApiDeps(context).deps;
  app = createApp(deps);
});
afterAll(() => context.close());

/** The `name=value` part of the session cookie an answer set. */
function sessionCookieOf(response: request.Response): string {
  const cookie = setCookieOf(response);
  return cookie.split(";")[0] ?? "";
}
function setCookieOf(response: request.Response, name = "punctual_session"): string {
  const header = response.headers["set-cookie"] as unknown as string[] | undefined;
  const cookie = header?.find((line) => line.startsWith(`${name}=`));
  if (!cookie) throw new Error(`no session cookie in ${JSON.stringify(response.headers)}`);
  return cookie;
}

async function signIn(apiKey: string, target = app, from = newAddress()) {
  const response = await request(target).post("/console/api/session").set("x-forwarded-for", from).send({ apiKey });
  expect(response.status).toBe(200);
  return { response, cookie: sessionCookieOf(response) };
}

async function signInOperator(target = app) {
  const response = await request(target)
    .post("/console/api/operator-session")
    .set("x-forwarded-for", newAddress())
    .send({ adminToken: ADMIN_TOKEN });
  expect(response.status).toBe(200);
  return { response, cookie: sessionCookieOf(response) };
}

const eventBody = () => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
});

const postEvent = (cookie: string) => request(app).post("/api/events").set("host", HOST).set("cookie", cookie);
/** The id of the organization's (only) API key. */
async function keyIdOf(org: TestOrganization): Promise<string> {
  return (await context.db.apiKey.findFirstOrThrow({ where: { orgId: org.orgId } })).id;
}
const eventCount = (org: TestOrganization) => context.db.event.count({ where: { orgId: org.orgId } });

describe("signing in with an API key", () => {
  it("answers the organization and its expiry, never the key, and sets an HttpOnly SameSite=Strict cookie for /", async () => {
    const org = await createTestOrganization(context, "Cookie Co");
    const before = Date.now();
    const { response } = await signIn(org.apiKey);
    expect(response.body).toEqual({
      kind: "organization",
      orgId: org.orgId,
      orgName: "Cookie Co",
      expiresAt: expect.any(String),
    });
    const expiresAt = Date.parse(response.body.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 43_200_000 - 1_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 43_200_000);
    expect(response.text).not.toContain(org.apiKey);
    expect(response.headers["cache-control"]).toBe("no-store");

    const attributes = setCookieOf(response)
      .split(";")
      .map((part) => part.trim());
    expect(attributes).toEqual(expect.arrayContaining(["Path=/", "HttpOnly", "SameSite=Strict", "Max-Age=43200"]));
    // Plain HTTP: a Secure cookie would not be kept.
    expect(attributes).not.toContain("Secure");
  });

  it("marks the cookie Secure, and names it __Host-, when the request came over HTTPS through a trusted proxy", async () => {
    const org = await createTestOrganization(context);
    const response = await request(app)
      .post("/console/api/session")
      .set("x-forwarded-for", newAddress())
      .set("x-forwarded-proto", "https")
      .send({ apiKey: org.apiKey });
    expect(response.status).toBe(200);
    const attributes = setCookieOf(response, "__Host-punctual_session").split("; ");
    expect(attributes).toEqual(expect.arrayContaining(["Secure", "HttpOnly", "SameSite=Strict", "Path=/"]));
    expect(attributes.some((attribute) => attribute.startsWith("Domain="))).toBe(false);
  });

  it("ignores X-Forwarded-Proto from a proxy that is not trusted: no Secure", async () => {
    const direct = createApp({ ...deps, config: { ...context.config, TRUST_PROXY: loadConfig({}).TRUST_PROXY } });
    const org = await createTestOrganization(context);
    const response = await request(direct)
      .post("/console/api/session")
      .set("x-forwarded-proto", "https")
      .send({ apiKey: org.apiKey });
    expect(response.status).toBe(200);
    expect(setCookieOf(response).split("; ")).not.toContain("Secure");
  });

  it("keeps in Redis neither the cookie's value nor the key, only under a digest of the session id", async () => {
    const org = await createTestOrganization(context);
    const { cookie } = await signIn(org.apiKey);
    const sessionId = cookie.slice("punctual_session=".length);
    const keys = await context.redis.keys(`${context.config.QUEUE_PREFIX}:console-session:*`);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.some((key) => key.includes(sessionId))).toBe(false);
    const values = await context.redis.mget(...keys);
    const stored = values.find((value) => value?.includes(org.orgId));
    expect(stored).toBeDefined();
    expect(stored).not.toContain(org.apiKey);
    expect(JSON.parse(stored ?? "{}")).toMatchObject({ kind: "organization", orgId: org.orgId });
  });

  it("refuses a wrong key with 401, and blocks the client address once the failed-login budget is spent", async () => {
    const org = await createTestOrganization(context);
    const from = newAddress();
    for (let n = 0; n < FAILURES; n++) {
      const wrong = await request(app)
        .post("/console/api/session")
        .set("x-forwarded-for", from)
        .send({ apiKey: `pk_wrong${n}` });
      expect({ status: wrong.status, body: wrong.body }).toEqual({ status: 401, body: { message: "Invalid API key" } });
    }
    const refused = await request(app)
      .post("/console/api/session")
      .set("x-forwarded-for", from)
      .send({ apiKey: org.apiKey });
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 429,
      body: { message: TOO_MANY_REQUESTS },
    });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    // The same budget as the admin API's wrong tokens.
    const admin = await request(app)
      .get("/api/admin/organizations")
      .set("x-forwarded-for", from)
      .set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(admin.status).toBe(429);
    // Another client is not affected.
    expect((await signIn(org.apiKey)).response.status).toBe(200);
  });

  it("refuses a revoked key and a body without one", async () => {
    const org = await createTestOrganization(context);
    await revokeApiKey({ db: context.db, config: context.config }, { keyId: await keyIdOf(org) });
    const revoked = await request(app)
      .post("/console/api/session")
      .set("x-forwarded-for", newAddress())
      .send({ apiKey: org.apiKey });
    expect({ status: revoked.status, body: revoked.body }).toEqual({
      status: 401,
      body: { message: "Invalid API key" },
    });
    const empty = await request(app).post("/console/api/session").set("x-forwarded-for", newAddress()).send({});
    expect({ status: empty.status, body: empty.body }).toEqual({
      status: 400,
      body: { message: "'apiKey' is required" },
    });
  });

  it("refuses a sign-in sent from another site's page", async () => {
    const org = await createTestOrganization(context);
    const response = await request(app)
      .post("/console/api/session")
      .set("x-forwarded-for", newAddress())
      .set("host", HOST)
      .set("origin", "https://evil.example")
      .send({ apiKey: org.apiKey });
    expect({ status: response.status, body: response.body }).toEqual({
      status: 403,
      body: { message: "Cross-site request refused" },
    });
    expect(response.headers["set-cookie"]).toBeUndefined();
  });
});

describe("the organization's cookie on the API", () => {
  it("lists the organization's events with GET", async () => {
    const org = await createTestOrganization(context);
    const created = await request(app).post("/api/events").set("x-api-key", org.apiKey).send(eventBody());
    expect(created.status).toBe(200);
    const { cookie } = await signIn(org.apiKey);
    const listed = await request(app).get("/api/events").set("cookie", cookie);
    expect(listed.status).toBe(200);
    expect((listed.body as { id: string }[]).map((event) => event.id)).toEqual([created.body.id]);
  });

  it("creates an event with POST from this origin (Origin or Sec-Fetch-Site), and refuses one without it or from another site", async () => {
    const org = await createTestOrganization(context);
    const { cookie } = await signIn(org.apiKey);

    const sameOrigin = await postEvent(cookie).set("origin", ORIGIN).send(eventBody());
    expect(sameOrigin.status).toBe(200);
    expect(sameOrigin.body.id).toMatch(/^evt_/);
    const fetchSite = await postEvent(cookie).set("sec-fetch-site", "same-origin").send(eventBody());
    expect(fetchSite.status).toBe(200);

    const refused = { status: 403, body: { message: "Cross-site request refused" } };
    const without = await postEvent(cookie).send(eventBody());
    expect({ status: without.status, body: without.body }).toEqual(refused);
    const foreign = await postEvent(cookie).set("origin", "https://evil.example").send(eventBody());
    expect({ status: foreign.status, body: foreign.body }).toEqual(refused);
    const sibling = await postEvent(cookie).set("origin", ORIGIN).set("sec-fetch-site", "same-site").send(eventBody());
    expect({ status: sibling.status, body: sibling.body }).toEqual(refused);
    expect(await eventCount(org)).toBe(2);
  });

  it("counts cookie requests against the rate limit of the key the session was opened with", async () => {
    const org = await createTestOrganization(context);
    const { cookie } = await signIn(org.apiKey);
    const byKey = await request(app).get("/api/events").set("x-api-key", org.apiKey);
    const byCookie = await request(app).get("/api/events").set("cookie", cookie);
    const byKeyAgain = await request(app).get("/api/events").set("x-api-key", org.apiKey);
    const remaining = [byKey, byCookie, byKeyAgain].map((response) => Number(response.headers["ratelimit-remaining"]));
    const limit = context.config.RATE_LIMIT_PER_MINUTE;
    expect(remaining).toEqual([limit - 1, limit - 2, limit - 3]);
  });

  it("lets an explicit x-api-key header take precedence over the cookie", async () => {
    const cookieOrg = await createTestOrganization(context);
    const keyOrg = await createTestOrganization(context);
    const { cookie } = await signIn(cookieOrg.apiKey);
    const created = await request(app)
      .post("/api/events")
      .set("cookie", cookie)
      .set("x-api-key", keyOrg.apiKey)
      .send(eventBody());
    // A header is no browser's doing: no origin is needed, and the event is the key's organization's.
    expect(created.status).toBe(200);
    expect(await eventCount(keyOrg)).toBe(1);
    expect(await eventCount(cookieOrg)).toBe(0);
    const wrongKey = await request(app).get("/api/events").set("cookie", cookie).set("x-api-key", "pk_wrong");
    expect({ status: wrongKey.status, body: wrongKey.body }).toEqual({
      status: 401,
      body: { message: "Invalid API key" },
    });
  });

  it("is refused on the admin API", async () => {
    const org = await createTestOrganization(context);
    const { cookie } = await signIn(org.apiKey);
    const admin = await request(app).get("/api/admin/organizations").set("cookie", cookie);
    expect({ status: admin.status, body: admin.body }).toEqual({
      status: 401,
      body: { message: "Missing admin token" },
    });
  });
});

describe("the session's end", () => {
  it("GET /console/api/session answers the session; DELETE signs out, clears the cookie and ends it on the API", async () => {
    const org = await createTestOrganization(context, "Leaving Ltd");
    const { cookie, response: opened } = await signIn(org.apiKey);
    const current = await request(app).get("/console/api/session").set("cookie", cookie);
    expect({ status: current.status, body: current.body }).toEqual({ status: 200, body: opened.body });
    expect(current.text).not.toContain(org.apiKey);

    const signedOut = await request(app).delete("/console/api/session").set("cookie", cookie);
    expect(signedOut.status).toBe(204);
    const cleared = setCookieOf(signedOut);
    expect(cleared).toMatch(/^punctual_session=;/);
    expect(cleared).toContain("Expires=Thu, 01 Jan 1970");

    const after = await request(app).get("/console/api/session").set("cookie", cookie);
    expect({ status: after.status, body: after.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
    const events = await request(app).get("/api/events").set("cookie", cookie);
    expect({ status: events.status, body: events.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
  });

  it("answers 401 Not signed in without a cookie", async () => {
    const response = await request(app).get("/console/api/session");
    expect({ status: response.status, body: response.body }).toEqual({
      status: 401,
      body: { message: "Not signed in" },
    });
  });

  it("answers 204 with no body instead, when asked with optional=true, signed out or with an ended session", async () => {
    const none = await request(app).get("/console/api/session?optional=true");
    expect({ status: none.status, text: none.text }).toEqual({ status: 204, text: "" });

    const org = await createTestOrganization(context, "Checking Ltd");
    const { cookie, response: opened } = await signIn(org.apiKey);
    const open = await request(app).get("/console/api/session?optional=true").set("cookie", cookie);
    expect({ status: open.status, body: open.body }).toEqual({ status: 200, body: opened.body });
    await request(app).delete("/console/api/session").set("cookie", cookie);
    const ended = await request(app).get("/console/api/session?optional=true").set("cookie", cookie);
    expect(ended.status).toBe(204);
  });

  it("ends a session after CONSOLE_SESSION_TTL_SECONDS", async () => {
    const shortLived = createApp({ ...deps, config: { ...context.config, CONSOLE_SESSION_TTL_SECONDS: 1 } });
    const org = await createTestOrganization(context);
    const { cookie, response } = await signIn(org.apiKey, shortLived);
    expect(setCookieOf(response)).toContain("Max-Age=1");
    expect((await request(shortLived).get("/api/events").set("cookie", cookie)).status).toBe(200);
    await expect
      .poll(async () => (await request(shortLived).get("/console/api/session").set("cookie", cookie)).status, {
        timeout: 5_000,
        interval: 200,
      })
      .toBe(401);
    const events = await request(shortLived).get("/api/events").set("cookie", cookie);
    expect({ status: events.status, body: events.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
  });

  it("ends the sessions of a key once it is revoked, and of a key once it is rotated", async () => {
    const revokedOrg = await createTestOrganization(context);
    const rotatedOrg = await createTestOrganization(context);
    const revoked = await signIn(revokedOrg.apiKey);
    const rotated = await signIn(rotatedOrg.apiKey);
    for (const { cookie } of [revoked, rotated]) {
      expect((await request(app).get("/api/events").set("cookie", cookie)).status).toBe(200);
    }
    await revokeApiKey({ db: context.db, config: context.config }, { keyId: await keyIdOf(revokedOrg) });
    const replacement = await rotateApiKey(
      { db: context.db, config: context.config },
      { keyId: await keyIdOf(rotatedOrg) },
    );
    for (const { cookie } of [revoked, rotated]) {
      const events = await request(app).get("/api/events").set("cookie", cookie);
      expect({ status: events.status, body: events.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
      expect((await request(app).get("/console/api/session").set("cookie", cookie)).status).toBe(401);
    }
    // The new key opens a session of its own.
    const renewed = await signIn(replacement.apiKey);
    expect((await request(app).get("/api/events").set("cookie", renewed.cookie)).status).toBe(200);
  });
});

describe("the operator's session", () => {
  it("answers kind operator, never the token, and works on the admin API", async () => {
    const { response, cookie } = await signInOperator();
    expect(response.body).toEqual({ kind: "operator", expiresAt: expect.any(String) });
    expect(response.text).not.toContain(ADMIN_TOKEN);
    const current = await request(app).get("/console/api/session").set("cookie", cookie);
    expect({ status: current.status, body: current.body }).toEqual({ status: 200, body: response.body });
    const listed = await request(app).get("/api/admin/organizations").set("cookie", cookie);
    expect(listed.status).toBe(200);
    expect(Array.isArray(listed.body)).toBe(true);
  });

  it("changes things on the admin API only from this origin", async () => {
    const { cookie } = await signInOperator();
    const create = (email: string) =>
      request(app).post("/api/admin/accounts").set("host", HOST).set("cookie", cookie).send({ email });
    const sameOrigin = await create("operator-made@example.com").set("origin", ORIGIN);
    expect(sameOrigin.status).toBe(201);
    const foreign = await create("forged@example.com").set("origin", "https://evil.example");
    expect({ status: foreign.status, body: foreign.body }).toEqual({
      status: 403,
      body: { message: "Cross-site request refused" },
    });
    expect(await context.db.account.count({ where: { email: "forged@example.com" } })).toBe(0);
  });

  it("is refused on the organization API", async () => {
    const { cookie } = await signInOperator();
    const events = await request(app).get("/api/events").set("cookie", cookie);
    expect({ status: events.status, body: events.body }).toEqual({ status: 401, body: { message: "Missing API key" } });
  });

  it("refuses a wrong admin token with 401, then blocks the client address", async () => {
    const from = newAddress();
    const attempt = (adminToken: string) =>
      request(app).post("/console/api/operator-session").set("x-forwarded-for", from).send({ adminToken });
    for (let n = 0; n < FAILURES; n++) {
      const wrong = await attempt(`wrong-token-${n}`);
      expect({ status: wrong.status, body: wrong.body }).toEqual({
        status: 401,
        body: { message: "Invalid admin token" },
      });
    }
    const refused = await attempt(ADMIN_TOKEN);
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 429,
      body: { message: TOO_MANY_REQUESTS },
    });
  });

  it("ends when the admin token changes", async () => {
    const { cookie } = await signInOperator();
    const otherToken = createApp({ ...deps, config: { ...context.config, ADMIN_TOKEN: "sec-Other7Token2Value9Xy" } });
    const current = await request(otherToken).get("/console/api/session").set("cookie", cookie);
    expect({ status: current.status, body: current.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
    const admin = await request(otherToken).get("/api/admin/organizations").set("cookie", cookie);
    expect({ status: admin.status, body: admin.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
  });

  it("does not exist without an ADMIN_TOKEN (404)", async () => {
    const withoutToken = createApp({ ...deps, config: { ...context.config, ADMIN_TOKEN: undefined } });
    const response = await request(withoutToken)
      .post("/console/api/operator-session")
      .set("x-forwarded-for", newAddress())
      .send({ adminToken: ADMIN_TOKEN });
    expect({ status: response.status, body: response.body }).toEqual({ status: 404, body: { message: "Not found" } });
  });
});
