import { mkdirSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import { QUEUE_NAMES } from "@punctual/core";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../services/api/src/app.ts";
import { createTestApiDeps, createTestContext, type TestContext } from "../support/context.ts";
import { launchChromium, skipBrowserCheck } from "./chromium.ts";

// /docs and /admin/queues must render their content in a real browser, not just answer
// 200. Debian's `chromium` package, driven by playwright-core (which downloads no browser of its
// own). Without Chromium the test skips with a message on a developer's machine; in CI (where
// .ci/run installs it) a missing browser is a failure.
//
// `SCREENSHOTS=1 pnpm exec vitest run test/browser` also writes docs/api-docs.png and
// docs/bull-board.png, the README's screenshots.

const ADMIN_TOKEN = "br-Mx5kP8qZt3Wn7Rc2Yd";
const SCREENSHOT_DIR = process.env.SCREENSHOTS ? resolve(import.meta.dirname, "../../docs") : undefined;

describe.skipIf(skipBrowserCheck("browser check"))("operator pages in headless Chromium", () => {
  let context: TestContext;
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    // In CI the check runs whatever happens: a missing browser fails every test here.
    browser = await launchChromium();
    context = await createTestContext({ ADMIN_TOKEN });
    const { deps, queue, cronQueue } = createTestApiDeps(context);
    // A few jobs, so the dashboard has something to show.
    for (const [n, minutes] of [15, 45, 90, 240].entries()) {
      await queue.add(
        "deliver-event",
        { eventId: `evt_example_${n + 1}` },
        { delay: minutes * 60_000, jobId: `event-evt_example_${n + 1}` },
      );
    }
    await cronQueue.upsertJobScheduler(
      "cron-cron_example",
      { pattern: "*/5 * * * *", tz: "UTC" },
      {
        name: "cron-run",
        data: { cronJobId: "cron_example" },
      },
    );
    server = createApp(deps).listen(0, "127.0.0.1");
    await new Promise<void>((ready) => server.once("listening", ready));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
    await context?.close();
  });

  /** A page that may only talk to the server under test; anything else is recorded and refused. */
  async function openPage(credentials?: { username: string; password: string }) {
    const browserContext = await browser.newContext({
      viewport: { width: 1360, height: 860 },
      ...(credentials ? { httpCredentials: credentials } : {}),
    });
    const page = await browserContext.newPage();
    const outside: string[] = [];
    const errors: string[] = [];
    /** What the page's Content-Security-Policy refused (Chromium reports each on the console). */
    const refusedByPolicy: string[] = [];
    await page.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(base) || url.startsWith("data:") || url.startsWith("blob:")) return route.continue();
      outside.push(url);
      return route.abort();
    });
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (/Content Security Policy/i.test(message.text())) refusedByPolicy.push(message.text());
    });
    return { page, outside, errors, refusedByPolicy, close: () => browserContext.close() };
  }

  /** The page's text as rendered (`innerText`: hidden elements and script bodies left out). */
  // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point of the check
  const visibleText = (page: Page) => page.locator("body").innerText();

  async function screenshot(page: Page, name: string) {
    if (!SCREENSHOT_DIR) return;
    mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: resolve(SCREENSHOT_DIR, name) });
  }

  it("renders the API reference at /docs from this server alone", async () => {
    const { page, outside, errors, refusedByPolicy, close } = await openPage();
    try {
      const response = await page.goto(`${base}/docs`, { waitUntil: "domcontentloaded" });
      expect(response?.status()).toBe(200);
      // Scalar renders the document it fetched: the title, the tags and the operations.
      await expect.poll(() => visibleText(page), { timeout: 30_000 }).toMatch(/POST\s*\/api\/events/);
      const text = await visibleText(page);
      for (const shown of ["Punctual API", "OAS 3.1.0", "Schedule an event", "Cron jobs", "Admin", "Operations"]) {
        expect(text).toContain(shown);
      }
      expect(errors).toEqual([]);
      // Everything came from this server: nothing was fetched from a CDN or font service.
      expect(outside).toEqual([]);

      // An operation's own section: its body fields, from the schema that validates the request.
      await page.locator("h3", { hasText: "Schedule an event" }).first().scrollIntoViewIfNeeded();
      await expect.poll(() => visibleText(page)).toContain("Idempotency-Key");
      // The page's policy (its start script allowed by hash, no 'unsafe-inline' for scripts)
      // refused nothing Scalar needs.
      expect(refusedByPolicy).toEqual([]);
      await screenshot(page, "api-docs.png");
    } finally {
      await close();
    }
  });

  it("asks for credentials at /admin/queues", async () => {
    const { page, close } = await openPage();
    try {
      // The Basic challenge makes a browser ask; headless Chromium cannot, so the navigation fails.
      const failure = await page.goto(`${base}/admin/queues`).then(
        () => "loaded",
        (error: Error) => error.message,
      );
      expect(failure).toContain("ERR_INVALID_AUTH_CREDENTIALS");
      const response = await page.request.get(`${base}/admin/queues`);
      expect(response.status()).toBe(401);
      expect(response.headers()["www-authenticate"]).toBe('Basic realm="Punctual"');
    } finally {
      await close();
    }
  });

  it("renders every queue in Bull Board with the admin credentials, from this server alone", async () => {
    const { page, outside, errors, refusedByPolicy, close } = await openPage({
      username: "admin",
      password: ADMIN_TOKEN,
    });
    try {
      const response = await page.goto(`${base}/admin/queues`, { waitUntil: "domcontentloaded" });
      expect(response?.status()).toBe(200);
      // Every queue's card, with its job count: 4 delayed events and the cron job's next firing.
      await expect.poll(() => visibleText(page), { timeout: 30_000 }).toMatch(/events[\s\S]*4 Jobs/);
      const text = await visibleText(page);
      for (const name of [...Object.values(QUEUE_NAMES), "Punctual queues"]) expect(text).toContain(name);
      expect(errors).toEqual([]);

      // The events queue's own page lists its delayed jobs.
      await page.goto(`${base}/admin/queues/queue/${QUEUE_NAMES.events}?status=delayed`, {
        waitUntil: "domcontentloaded",
      });
      await expect.poll(() => visibleText(page), { timeout: 30_000 }).toContain("event-evt_example_1");
      expect(errors).toEqual([]);
      // Nothing was fetched from a font service or any other host, and the page's policy (this
      // origin only, inline styles by hash) refused nothing the page needs.
      await page.waitForLoadState("networkidle");
      expect(outside).toEqual([]);
      expect(refusedByPolicy).toEqual([]);
      await screenshot(page, "bull-board.png");
    } finally {
      await close();
    }
  });
});
