import { createHash } from "node:crypto";
import type { Server } from "node:http";
import { QUEUE_NAMES } from "@punctual/core";
import { Queue } from "bullmq";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApiDeps, createTestContext, type TestContext } from "../../../test/support/context.ts";
import { CROSS_SITE_WRITE_REFUSED } from "../src/admin-ui/browser-guards.ts";
import { createApp } from "../src/app.ts";

// Contract §8: Bull Board at /admin/queues shows every queue, behind the admin credentials (HTTP
// Basic with ADMIN_TOKEN as the password, or the Bearer token); never open. Failed logins are
// limited in admin-security.test.ts; here the limit is out of the way.

const ADMIN_TOKEN = "bb-Nz5qW8rT2kLm7Vx4PcJ6";
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

let context: TestContext;
let app: ReturnType<typeof createApp>;
let queues: ReturnType<typeof createTestApiDeps>;

beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN, ADMIN_AUTH_FAILURES_PER_MINUTE: "1000" });
  queues = createTestApiDeps(context);
  app = createApp(queues.deps);
});
afterAll(() => context.close());

describe("Bull Board", () => {
  it("asks for credentials: 401 with a Basic challenge and a JSON body", async () => {
    for (const path of ["/admin/queues", "/admin/queues/api/queues", "/admin/queues/static/js/main.js"]) {
      const response = await request(app).get(path);
      expect(response.status, path).toBe(401);
      expect(response.headers["www-authenticate"]).toBe('Basic realm="Punctual"');
      expect(response.body).toEqual({ message: "Admin credentials required" });
    }
  });

  it("refuses wrong credentials", async () => {
    for (const authorization of [
      basic("admin", "wrong-password"),
      basic(ADMIN_TOKEN, ""),
      `Bearer ${ADMIN_TOKEN}x`,
      `Basic ${Buffer.from(ADMIN_TOKEN).toString("base64")}`,
      "Basic !!!",
      ADMIN_TOKEN,
    ]) {
      const response = await request(app).get("/admin/queues").set("authorization", authorization);
      expect(response.status, authorization).toBe(401);
    }
  });

  it("opens with Basic (any user, ADMIN_TOKEN as password) or with the Bearer token", async () => {
    for (const authorization of [basic("admin", ADMIN_TOKEN), basic("", ADMIN_TOKEN), `Bearer ${ADMIN_TOKEN}`]) {
      const response = await request(app).get("/admin/queues").set("authorization", authorization);
      expect(response.status, authorization).toBe(200);
      expect(response.headers["content-type"]).toMatch(/^text\/html/);
      expect(response.text).toContain('<base href="/admin/queues/" />');
      expect(response.text).toContain("<title>Punctual queues</title>");
    }
  });

  it("shows every queue under the deployment's prefix, with its jobs", async () => {
    await queues.queue.add(
      "deliver-event",
      { eventId: "evt_shown_in_board" },
      { delay: 3_600_000, jobId: "event-shown" },
    );
    const response = await request(app)
      .get("/admin/queues/api/queues")
      .query({ activeQueue: QUEUE_NAMES.events, status: "delayed", page: "1" })
      .set("authorization", basic("admin", ADMIN_TOKEN));
    expect(response.status).toBe(200);
    const shown = response.body.queues as { name: string; counts: Record<string, number>; jobs: { id: string }[] }[];
    expect(shown.map((queue) => queue.name).sort()).toEqual(Object.values(QUEUE_NAMES).sort());
    const events = shown.find((queue) => queue.name === QUEUE_NAMES.events);
    expect(events?.counts.delayed).toBe(1);
    expect(events?.jobs.map((job) => job.id)).toEqual(["event-shown"]);
  });

  it("hands paths it does not know back to the app's JSON 404", async () => {
    const response = await request(app)
      .get("/admin/queues/api/no-such-call")
      .set("authorization", basic("admin", ADMIN_TOKEN));
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Not found" });
  });

  it("does not exist when no ADMIN_TOKEN is configured", async () => {
    const closed = createApp({ ...queues.deps, config: { ...queues.deps.config, ADMIN_TOKEN: undefined } });
    for (const authorization of [undefined, basic("admin", ADMIN_TOKEN), `Bearer ${ADMIN_TOKEN}`]) {
      const call = request(closed).get("/admin/queues");
      const response = await (authorization === undefined ? call : call.set("authorization", authorization));
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ message: "Not found" });
      expect(response.headers["www-authenticate"]).toBeUndefined();
    }
  });
});

describe("Bull Board in a browser", () => {
  // A listening server, so that the test knows the Host its requests carry (its own origin).
  let server: Server;
  let origin: string;
  let maintenance: Queue;
  beforeAll(async () => {
    server = app.listen(0, "127.0.0.1");
    await new Promise<void>((resolve) => server.once("listening", resolve));
    const address = server.address();
    origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    maintenance = new Queue(QUEUE_NAMES.maintenance, {
      connection: context.redis,
      prefix: context.config.QUEUE_PREFIX,
    });
    context.queues.push(maintenance);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const pause = (headers: Record<string, string>) =>
    request(origin)
      .put(`/admin/queues/api/queues/${QUEUE_NAMES.maintenance}/pause`)
      .set("authorization", basic("admin", ADMIN_TOKEN))
      .set(headers);
  const resume = () =>
    request(origin)
      .put(`/admin/queues/api/queues/${QUEUE_NAMES.maintenance}/resume`)
      .set("authorization", basic("admin", ADMIN_TOKEN))
      .set("origin", origin);

  it("refuses writes another site's page makes with the browser's cached credentials", async () => {
    const crossSite: Record<string, string>[] = [
      { origin: "http://evil.example" },
      { origin: "null" },
      { origin: origin.replace("127.0.0.1", "localhost") },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site", origin: "http://queues.example" },
      { "sec-fetch-site": "same-site" },
    ];
    for (const headers of crossSite) {
      const response = await pause(headers);
      expect(response.status, JSON.stringify(headers)).toBe(403);
      expect(response.body).toEqual({ message: CROSS_SITE_WRITE_REFUSED });
    }
    expect(await maintenance.isPaused()).toBe(false);
    // Reads stay open to links from elsewhere.
    const read = await request(origin)
      .get("/admin/queues/api/queues")
      .set("authorization", basic("admin", ADMIN_TOKEN))
      .set("origin", "http://evil.example")
      .set("sec-fetch-site", "cross-site");
    expect(read.status).toBe(200);
  });

  it("accepts writes from its own page and from clients that are no browser", async () => {
    try {
      const own = await pause({ origin, "sec-fetch-site": "same-origin" });
      expect(own.status).toBe(200);
      expect(await maintenance.isPaused()).toBe(true);
      expect((await resume()).status).toBe(200);
      expect(await maintenance.isPaused()).toBe(false);
      // curl and scripts send neither Origin nor Sec-Fetch-Site.
      expect((await pause({})).status).toBe(200);
      expect(await maintenance.isPaused()).toBe(true);
    } finally {
      await maintenance.resume();
    }
  });

  it("may not be framed: every answer says so", async () => {
    const authorization = basic("admin", ADMIN_TOKEN);
    for (const [path, withCredentials] of [
      ["/admin/queues", false],
      ["/admin/queues", true],
      ["/admin/queues/api/queues", true],
    ] as const) {
      const call = request(app).get(path);
      const response = await (withCredentials ? call.set("authorization", authorization) : call);
      expect(response.headers["x-frame-options"], path).toBe("DENY");
      expect(directives(response.headers["content-security-policy"]).get("frame-ancestors"), path).toEqual(["'none'"]);
    }
  });

  it("never announces the framework: no X-Powered-By on any answer", async () => {
    const authorization = basic("admin", ADMIN_TOKEN);
    const page = await request(app).get("/admin/queues").set("authorization", authorization);
    const script = /src="([^"]+\.js)"/.exec(page.text)?.[1];
    expect(script).toBeDefined();
    const asset = await request(app).get(`/admin/queues/${script}`).set("authorization", authorization);
    expect(asset.status).toBe(200);
    const answers: [string, request.Response][] = [
      ["page", page],
      ["asset", asset],
      ["board API", await request(app).get("/admin/queues/api/queues").set("authorization", authorization)],
      ["board 404", await request(app).get("/admin/queues/api/no-such-call").set("authorization", authorization)],
      ["cross-site write", await pause({ origin: "http://evil.example" })],
      ["board 401", await request(app).get("/admin/queues")],
      ["/docs", await request(app).get("/docs")],
      ["OpenAPI", await request(app).get("/api/openapi.json")],
      ["API 401", await request(app).get("/api/events")],
      ["/healthz", await request(app).get("/healthz")],
      ["/metrics", await request(app).get("/metrics")],
      ["404", await request(app).get("/nowhere")],
    ];
    for (const [label, response] of answers) {
      expect(response.status, label).toBeLessThan(500);
      expect(response.headers["x-powered-by"], label).toBeUndefined();
    }
  });
});

/** A Content-Security-Policy header's directives and their sources. */
function directives(header: string | undefined): Map<string, string[]> {
  const parsed = new Map<string, string[]>();
  for (const directive of (header ?? "").split(";")) {
    const [name, ...sources] = directive.trim().split(/\s+/);
    if (name) parsed.set(name, sources);
  }
  return parsed;
}

const cspHash = (text: string) => `'sha256-${createHash("sha256").update(text).digest("base64")}'`;

describe("Bull Board's page, from this deployment alone", () => {
  const authorization = basic("admin", ADMIN_TOKEN);
  const get = (path: string) => request(app).get(path).set("authorization", authorization);
  /** Addresses naming a host (`https://…`, `//…`) in attributes that load something. */
  const absoluteLoads = (html: string) =>
    [
      ...html.matchAll(
        /<(?:link|script|img|iframe|source)\b[^>]*\b(?:href|src)\s*=\s*["']?((?:[a-z][a-z\d+.-]*:)?\/\/[^"'\s>]*)/gi,
      ),
    ].map((match) => match[1]);

  it("links no font service or other host, in the page or in its stylesheets", async () => {
    const page = await get("/admin/queues");
    expect(page.status).toBe(200);
    expect(page.text).not.toMatch(/fonts\.(googleapis|gstatic)\.com/);
    expect(absoluteLoads(page.text)).toEqual([]);
    // Its own files are still there, relative to <base>: the stylesheet and the scripts.
    const stylesheets = [...page.text.matchAll(/<link\b[^>]*href="(static\/[^"]+\.css)"/g)].map((match) => match[1]);
    const scripts = [...page.text.matchAll(/<script\b[^>]*src="(static\/[^"]+\.js)"/g)].map((match) => match[1]);
    expect(stylesheets.length).toBeGreaterThan(0);
    expect(scripts.length).toBeGreaterThan(0);
    for (const file of [...stylesheets, ...scripts])
      expect((await get(`/admin/queues/${file}`)).status, file).toBe(200);
    for (const file of stylesheets) {
      const css = (await get(`/admin/queues/${file}`)).text;
      const loads = [...css.matchAll(/(?:@import\s+(?:url\()?|url\()\s*["']?([^"')\s]+)/g)].map((match) => match[1]);
      expect(
        loads.filter((url) => /^(?:[a-z][a-z\d+.-]*:)?\/\//i.test(url ?? "")),
        file,
      ).toEqual([]);
    }
  });

  it("is served with a policy of this origin only: no host, no inline script, inline styles by hash", async () => {
    for (const path of ["/admin/queues", "/admin/queues/queue/events", "/admin/queues/api/queues"]) {
      const policy = directives((await get(path)).headers["content-security-policy"]);
      expect(policy.get("default-src"), path).toEqual(["'self'"]);
      expect(policy.get("script-src"), path).toEqual(["'self'"]);
      for (const [name, sources] of policy) {
        for (const source of sources) {
          expect(
            /^'(self|none|unsafe-hashes|sha256-[A-Za-z0-9+/]+=*)'$|^data:$/.test(source),
            `${path}: ${name} ${source}`,
          ).toBe(true);
        }
      }
    }
    // Each inline style the page carries is allowed by its hash; nothing else is inline.
    const page = await get("/admin/queues");
    const styleSources = directives(page.headers["content-security-policy"]).get("style-src") ?? [];
    const inline = [
      ...[...page.text.matchAll(/<style>([^<]*)<\/style>/g)].map((match) => match[1] ?? ""),
      ...[...page.text.matchAll(/\sstyle="([^"]*)"/g)].map((match) => match[1] ?? ""),
    ];
    expect(inline.length).toBeGreaterThan(0);
    for (const style of inline) expect(styleSources, style).toContain(cspHash(style));
    const scripts = [...page.text.matchAll(/<script\b([^>]*)>([^<]*)<\/script>/g)];
    for (const [, attributes, body] of scripts) {
      if (body?.trim()) expect(attributes, "an inline script must be data").toMatch(/type="application\/json"/);
    }
  });
});
