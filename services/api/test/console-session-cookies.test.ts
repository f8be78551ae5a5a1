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
import { SEVERAL_SESSION_COOKIES } from "../src/console-session/session-cookie.ts";
import { OTHER_ORGANIZATION_SESSION } from "../src/middleware/api-key-auth.ts";

// Which session a request acts for must be the one the console shows. Another port of the same host,
// or a sibling subdomain, can set a `punctual_session` of its own (for a narrower path, or for the
// parent domain), which the browser then sends beside the console's, first; over HTTPS the cookie's
// `__Host-` name keeps any other host from setting it; and the console says which organization it
// shows, so a cookie replaced after the page loaded cannot act for another organization.

const ADMIN_TOKEN = "sec-Cookie4Jar9Shadow2Tx";
const HOST = "console.punctual.test";
const ORIGIN = `http://${HOST}`;

let context: TestContext;
let app: ReturnType<typeof createApp>;
/** Sign-ins are counted per client address. */
const newAddress = clientAddresses("198.51.100");

beforeAll(async () => {
  context = await createProxiedTestContext({ ADMIN_TOKEN });
  app = createApp(createTestApiDeps(context).deps);
});
afterAll(() => context.close());

const setCookies = (response: request.Response) =>
  (response.headers["set-cookie"] as unknown as string[] | undefined) ?? [];

/** The `name=value` of the session cookie a sign-in set (`__Host-punctual_session` over HTTPS). */
function sessionCookieOf(response: request.Response, name = "punctual_session"): string {
  const line = setCookies(response).find((cookie) => cookie.startsWith(`${name}=`));
  if (!line) throw new Error(`no ${name} cookie in ${JSON.stringify(response.headers)}`);
  return line.split(";")[0] ?? "";
}

const idOfCookie = (cookie: string) => cookie.slice(cookie.indexOf("=") + 1);

async function signIn(org: TestOrganization, https = false) {
  const sent = request(app).post("/console/api/session").set("x-forwarded-for", newAddress());
  if (https) sent.set("x-forwarded-proto", "https");
  const response = await sent.send({ apiKey: org.apiKey });
  expect(response.status).toBe(200);
  return response;
}

async function signInOperator() {
  const response = await request(app)
    .post("/console/api/operator-session")
    .set("x-forwarded-for", newAddress())
    .send({ adminToken: ADMIN_TOKEN });
  expect(response.status).toBe(200);
  return sessionCookieOf(response);
}

const eventBody = () => ({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
});

const eventCount = (org: TestOrganization) => context.db.event.count({ where: { orgId: org.orgId } });

/** The Set-Cookie lines that expire `name` at `path` (host-only unless `domain`). */
function clearings(response: request.Response, name: string): { path: string; domain: string | undefined }[] {
  return setCookies(response)
    .filter((line) => line.startsWith(`${name}=;`) && line.includes("Expires=Thu, 01 Jan 1970"))
    .map((line) => {
      const attributes = line.split("; ");
      const attribute = (key: string) => attributes.find((part) => part.startsWith(`${key}=`))?.slice(key.length + 1);
      return { path: attribute("Path") ?? "", domain: attribute("Domain") };
    });
}

describe("a request with more than one session cookie", () => {
  it("is refused with 401 on the organization API, acts for neither session, and is told to forget every such cookie", async () => {
    const victim = await createTestOrganization(context, "Victim");
    const other = await createTestOrganization(context, "Other");
    const mine = sessionCookieOf(await signIn(victim));
    const planted = sessionCookieOf(await signIn(other));

    // A browser sends the cookie of the longer path first: the one set for `/api` by another port.
    const response = await request(app)
      .post("/api/events")
      .set("host", HOST)
      .set("origin", ORIGIN)
      .set("cookie", `${planted}; ${mine}`)
      .send(eventBody());
    expect({ status: response.status, body: response.body }).toEqual({
      status: 401,
      body: { message: SEVERAL_SESSION_COOKIES },
    });
    expect(await eventCount(other)).toBe(0);
    expect(await eventCount(victim)).toBe(0);

    // Expired for every path this request's cookies can have, host-only and for the host's domains.
    const cleared = clearings(response, "punctual_session");
    for (const path of ["/", "/api", "/api/", "/api/events"]) {
      for (const domain of [undefined, HOST, "punctual.test"]) {
        expect(cleared, `${path} ${domain}`).toContainEqual({ path, domain });
      }
    }
    for (const line of setCookies(response)) expect(line).toContain("HttpOnly");

    // Each cookie alone is still its own session: nothing was ended, only refused together.
    expect((await request(app).get("/api/events").set("cookie", mine)).status).toBe(200);
  });

  it("is refused even when the planted cookie is empty (it used to hide the console's)", async () => {
    const org = await createTestOrganization(context);
    const mine = sessionCookieOf(await signIn(org));
    const response = await request(app).get("/api/events").set("cookie", `punctual_session=; ${mine}`);
    expect({ status: response.status, body: response.body }).toEqual({
      status: 401,
      body: { message: SEVERAL_SESSION_COOKIES },
    });
  });

  it("is refused on GET /console/api/session and on the admin API, with the cookie cleared", async () => {
    const org = await createTestOrganization(context);
    const organizationCookie = sessionCookieOf(await signIn(org));
    const operatorCookie = await signInOperator();

    const session = await request(app)
      .get("/console/api/session")
      .set("cookie", `${organizationCookie}; ${operatorCookie}`);
    expect({ status: session.status, body: session.body }).toEqual({
      status: 401,
      body: { message: SEVERAL_SESSION_COOKIES },
    });
    expect(clearings(session, "punctual_session")).toContainEqual({ path: "/", domain: undefined });

    const admin = await request(app)
      .get("/api/admin/organizations")
      .set("cookie", `${organizationCookie}; ${operatorCookie}`);
    expect({ status: admin.status, body: admin.body }).toEqual({
      status: 401,
      body: { message: SEVERAL_SESSION_COOKIES },
    });
    expect(clearings(admin, "punctual_session")).toContainEqual({ path: "/api/admin", domain: undefined });
  });

  it("is signed out of both by DELETE /console/api/session", async () => {
    const first = await createTestOrganization(context);
    const second = await createTestOrganization(context);
    const one = sessionCookieOf(await signIn(first));
    const two = sessionCookieOf(await signIn(second));
    const signedOut = await request(app).delete("/console/api/session").set("cookie", `${two}; ${one}`);
    expect(signedOut.status).toBe(204);
    expect(clearings(signedOut, "punctual_session")).toContainEqual({ path: "/console/api", domain: undefined });
    for (const cookie of [one, two]) {
      expect((await request(app).get("/console/api/session").set("cookie", cookie)).status).toBe(401);
    }
  });
});

describe("over HTTPS", () => {
  const https = (test: request.Test) => test.set("x-forwarded-proto", "https");

  it("names the cookie __Host-punctual_session: Secure, Path=/ and no Domain", async () => {
    const org = await createTestOrganization(context);
    const response = await signIn(org, true);
    const line = setCookies(response).find((cookie) => cookie.startsWith("__Host-punctual_session="));
    expect(line).toBeDefined();
    const attributes = (line ?? "").split("; ");
    expect(attributes).toEqual(expect.arrayContaining(["Path=/", "Secure", "HttpOnly", "SameSite=Strict"]));
    expect(attributes.some((attribute) => attribute.startsWith("Domain="))).toBe(false);
    expect(setCookies(response).some((cookie) => cookie.startsWith("punctual_session="))).toBe(false);

    const cookie = sessionCookieOf(response, "__Host-punctual_session");
    expect((await https(request(app).get("/api/events")).set("cookie", cookie)).status).toBe(200);
    const current = await https(request(app).get("/console/api/session")).set("cookie", cookie);
    expect(current.body).toMatchObject({ kind: "organization", orgId: org.orgId });
  });

  it("reads only the __Host- cookie: a plain punctual_session, which any host of the site can set, acts for nobody", async () => {
    const victim = await createTestOrganization(context);
    const other = await createTestOrganization(context);
    const mine = sessionCookieOf(await signIn(victim, true), "__Host-punctual_session");
    const planted = `punctual_session=${idOfCookie(sessionCookieOf(await signIn(other)))}`;

    const created = await https(request(app).post("/api/events"))
      .set("host", HOST)
      .set("origin", `https://${HOST}`)
      .set("cookie", `${planted}; ${mine}`)
      .send(eventBody());
    expect(created.status).toBe(200);
    expect(await eventCount(victim)).toBe(1);
    expect(await eventCount(other)).toBe(0);

    const alone = await https(request(app).get("/api/events")).set("cookie", planted);
    expect({ status: alone.status, body: alone.body }).toEqual({ status: 401, body: { message: "Missing API key" } });
  });

  it("signs out by clearing the __Host- cookie, and a plain one from before the prefix", async () => {
    const org = await createTestOrganization(context);
    const mine = sessionCookieOf(await signIn(org, true), "__Host-punctual_session");
    const signedOut = await https(request(app).delete("/console/api/session")).set(
      "cookie",
      `punctual_session=left-from-before; ${mine}`,
    );
    expect(signedOut.status).toBe(204);
    expect(clearings(signedOut, "__Host-punctual_session")).toEqual([{ path: "/", domain: undefined }]);
    expect(clearings(signedOut, "punctual_session")).toEqual([{ path: "/", domain: undefined }]);
    const cleared = setCookies(signedOut).find((line) => line.startsWith("__Host-punctual_session=")) ?? "";
    expect(cleared.split("; ")).toEqual(expect.arrayContaining(["Secure", "Path=/"]));
    expect((await https(request(app).get("/api/events")).set("cookie", mine)).status).toBe(401);
  });
});

describe("the organization the console shows", () => {
  it("is the one the API acts for: a call for another organization's cookie is refused, and the session then answers that organization", async () => {
    const shown = await createTestOrganization(context, "Shown Org");
    const other = await createTestOrganization(context, "Other Org");
    const first = await signIn(shown);
    // What the page learned when it loaded, through the cookie every call then sends.
    const page = await request(app).get("/console/api/session").set("cookie", sessionCookieOf(first));
    expect(page.body).toMatchObject({ orgId: shown.orgId, orgName: "Shown Org" });

    // The cookie is replaced afterwards (same name and path, from another port or tab).
    const replaced = sessionCookieOf(await signIn(other));
    const call = await request(app)
      .post("/api/events")
      .set("host", HOST)
      .set("origin", ORIGIN)
      .set("cookie", replaced)
      .set("x-console-organization", page.body.orgId)
      .send(eventBody());
    expect({ status: call.status, body: call.body }).toEqual({
      status: 401,
      body: { message: OTHER_ORGANIZATION_SESSION },
    });
    expect(await eventCount(other)).toBe(0);
    expect(await eventCount(shown)).toBe(0);

    // The page's "who am I" answers what the API's cookie stands for, which the page then shows.
    const now = await request(app).get("/console/api/session").set("cookie", replaced);
    expect(now.body).toMatchObject({ kind: "organization", orgId: other.orgId, orgName: "Other Org" });
    const agreed = await request(app)
      .post("/api/events")
      .set("host", HOST)
      .set("origin", ORIGIN)
      .set("cookie", replaced)
      .set("x-console-organization", now.body.orgId)
      .send(eventBody());
    expect(agreed.status).toBe(200);
    expect(await eventCount(other)).toBe(1);
  });

  it("does not matter to a request authenticated by x-api-key", async () => {
    const org = await createTestOrganization(context);
    const response = await request(app)
      .get("/api/events")
      .set("x-api-key", org.apiKey)
      .set("x-console-organization", "org_someone_else");
    expect(response.status).toBe(200);
  });
});
