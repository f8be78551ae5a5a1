import { existsSync, mkdirSync } from "node:fs";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { resolve } from "node:path";
import AxeBuilder from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { createApp } from "../../services/api/src/app.ts";
import { createWorker, type DeliveryWorker } from "../../services/worker/src/worker.ts";
import { createTestApiDeps, createTestContext, type TestContext } from "../support/context.ts";
import { launchChromium, skipBrowserCheck } from "./chromium.ts";

// What the console's browser tests share: the real API (createApp) serving the built console, a
// real worker, Debian's Chromium driven by playwright-core (it downloads no browser of its own),
// and the checks every page gets (nothing loaded from elsewhere, no script error, no serious or
// critical accessibility violation).

export const CONSOLE_INDEX = resolve(import.meta.dirname, "../../services/console/dist/index.html");
const SCREENSHOT_DIR = process.env.SCREENSHOTS ? resolve(import.meta.dirname, "../../docs") : undefined;

/** Whether the browser tests are skipped (no Chromium outside CI); said once per file. */
export function skipBrowserTests(): boolean {
  return skipBrowserCheck("console browser check");
}

export interface ConsoleHarness {
  context: TestContext;
  base: string;
  browser: Browser;
  worker: DeliveryWorker;
  close(): Promise<void>;
}

/** The API with the built console, a worker and a browser, over a fresh database and prefix. */
export async function startConsoleHarness(settings: Record<string, string>): Promise<ConsoleHarness> {
  if (!existsSync(CONSOLE_INDEX)) {
    throw new Error(`${CONSOLE_INDEX} is missing: the console is not built; run pnpm build before these tests`);
  }
  // In CI the check runs whatever happens: a missing browser fails every test of the file.
  const browser = await launchChromium();
  const context = await createTestContext({
    WORKER_HEALTH_PORT: "0",
    // A page polls while it watches progress: the per-key budget must not be what a test measures.
    RATE_LIMIT_PER_MINUTE: "100000",
    ...settings,
  });
  const { deps } = createTestApiDeps(context);
  const worker = createWorker({ ...deps });
  await worker.start();
  const server: Server = createApp(deps).listen(0, "127.0.0.1");
  await new Promise<void>((ready) => server.once("listening", ready));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    context,
    base,
    browser,
    worker,
    async close() {
      await browser.close();
      await worker.stop();
      await new Promise<void>((done) => {
        server.close(() => done());
        server.closeAllConnections();
      });
      await context.close();
    },
  };
}

export interface OpenPage {
  page: Page;
  /** Requests the page tried to make to any other origin (refused). */
  outside: string[];
  /** Uncaught script errors and console errors of the page. */
  errors: string[];
  close(): Promise<void>;
}

/** A page that may only talk to the server under test; anything else is recorded and refused. */
export async function openPage(
  harness: ConsoleHarness,
  viewport: { width: number; height: number } = { width: 1280, height: 800 },
  /** The browser's time zone (the machine's by default). */
  timezoneId?: string,
): Promise<OpenPage> {
  const browserContext = await harness.browser.newContext({ viewport, ...(timezoneId ? { timezoneId } : {}) });
  const page = await browserContext.newPage();
  // Well inside a test's own time limit, so a missing element fails with its locator named.
  page.setDefaultTimeout(15_000);
  const outside: string[] = [];
  const errors: string[] = [];
  await page.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(harness.base) || url.startsWith("data:")) return route.continue();
    outside.push(url);
    return route.abort();
  });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    // A refused fetch logs "Failed to load resource" with its status: those are answers the page
    // shows (401 before sign-in, 400 for a bad expression), not faults of the page.
    if (message.type() === "error" && !message.text().startsWith("Failed to load resource")) {
      errors.push(message.text());
    }
  });
  return { page, outside, errors, close: () => browserContext.close() };
}

/** Signs in on the console's form, by keyboard: the field is labelled, Enter submits. */
export async function signIn(page: Page, base: string, as: "organization" | "operator", secret: string) {
  await page.goto(`${base}/console`, { waitUntil: "domcontentloaded" });
  if (as === "operator") await page.getByLabel("The operator").check();
  const field = page.getByLabel(as === "organization" ? "API key" : "Admin token");
  await field.fill(secret);
  await field.press("Enter");
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}

/** The page's text as rendered (`innerText`: hidden elements and script bodies left out). */
// biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point of the check
export const visibleText = (page: Page) => page.locator("body").innerText();

/** The h1 of the page, once there. */
export async function heading(page: Page): Promise<string> {
  return (await page.locator("h1").first().textContent()) ?? "";
}

/** Serious and critical accessibility violations of the page as it is now (axe-core), by rule. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).withTags(["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]).analyze();
  return results.violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map(
      (violation) =>
        `${violation.id} (${violation.impact}): ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`,
    );
}

// Run in the page (strings: this file is typed for Node, the page has the DOM).

/** The focused control's name: its aria-label, its label's text (a field), or its own text. */
const FOCUSED_NAME = `(() => {
  const element = document.activeElement;
  if (!element) return "";
  const label = element.labels && element.labels.length > 0 ? element.labels[0].innerText : undefined;
  return (element.getAttribute("aria-label") ?? label ?? element.innerText ?? "").trim();
})()`;

/** What the page's scripts could keep of a secret: cookies they can read, storage, the document. */
export const PAGE_STORAGE = `({
  cookie: document.cookie,
  local: JSON.stringify(localStorage),
  session: JSON.stringify(sessionStorage),
  html: document.documentElement.outerHTML,
})`;

/** Whether the focus is inside an open dialog. */
export const FOCUS_IN_DIALOG = `document.activeElement?.closest("dialog[open]") !== null && document.activeElement?.closest("dialog[open]") !== undefined`;

/** The focused element's outline style (a visible focus draws one). */
export const FOCUS_OUTLINE = `getComputedStyle(document.activeElement).outlineStyle`;

/** How far the page is wider than the window (sideways scrolling of the page itself). */
export const HORIZONTAL_OVERFLOW = `document.documentElement.scrollWidth - window.innerWidth`;

export async function inPage<T>(page: Page, expression: string): Promise<T> {
  return (await page.evaluate(expression)) as T;
}

/** Presses Tab until `name` has the focus (at most `limit` times); true when it got there. */
export async function tabTo(page: Page, name: RegExp, limit = 40): Promise<boolean> {
  for (let n = 0; n < limit; n++) {
    await page.keyboard.press("Tab");
    const focused = await inPage<string>(page, FOCUSED_NAME);
    if (name.test(focused)) return true;
  }
  return false;
}

/** docs/<name> when SCREENSHOTS is set: the whole page, or the window alone (a modal dialog's backdrop covers only that). */
export async function screenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<void> {
  if (!SCREENSHOT_DIR) return;
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  await page.screenshot({ path: resolve(SCREENSHOT_DIR, name), fullPage: options.fullPage ?? true });
}

/** An API call as a script would make it (x-api-key), not through the page. */
export async function apiCall(
  base: string,
  apiKey: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { "x-api-key": apiKey, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined };
}
