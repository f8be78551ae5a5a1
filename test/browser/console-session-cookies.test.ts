import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization, type TestOrganization } from "../support/context.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import {
  type ConsoleHarness,
  type OpenPage,
  openPage,
  signIn,
  skipBrowserTests,
  startConsoleHarness,
  visibleText,
} from "./console-support.ts";

// The console in headless Chromium while another page of the same host (another port: cookies do
// not tell ports apart) plants a session cookie of another organization, either beside the
// console's for a narrower path, or in place of it after the console loaded. Whatever the cookie
// jar holds, the console never acts for an organization it does not show.

describe.skipIf(skipBrowserTests())("the console's session cookie, in headless Chromium", () => {
  let harness: ConsoleHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    harness = await startConsoleHarness({});
    receiver = await startReceiver();
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await harness?.close();
  });

  /** A session of `org` opened outside the page (as the other port's page would have it). */
  async function sessionIdOf(org: TestOrganization): Promise<string> {
    const response = await fetch(`${harness.base}/console/api/session`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ apiKey: org.apiKey }),
    });
    expect(response.status).toBe(200);
    const cookie = response.headers.getSetCookie().find((line) => line.startsWith("punctual_session="));
    return cookie?.split(";")[0]?.slice("punctual_session=".length) ?? "";
  }

  /** Plants a `punctual_session` for this host (any port) at `path`, as a page there can. */
  async function plant(opened: OpenPage, value: string, path: string): Promise<void> {
    await opened.page
      .context()
      .addCookies([{ name: "punctual_session", value, domain: "127.0.0.1", path, httpOnly: true, sameSite: "Strict" }]);
  }

  async function sendTestDelivery(opened: OpenPage, path: string): Promise<void> {
    const { page } = opened;
    await page.getByRole("link", { name: "Test delivery" }).click();
    await page.getByLabel("Destination").fill(receiver.url.replace(/\/hook$/, path));
    await page.getByLabel("Payload").fill('{"ping":true}');
    await page.getByRole("button", { name: "Send test delivery" }).click();
  }

  const delivered = (path: string) => receiver.deliveries.filter((delivery) => delivery.path === path).length;

  it("refuses a call that carries a second cookie planted for /api, clears both, and works again after signing in", async () => {
    const mine = await createTestOrganization(harness.context, "Shown Org");
    const other = await createTestOrganization(harness.context, "Planted Org");
    const opened = await openPage(harness);
    try {
      await signIn(opened.page, harness.base, "organization", mine.apiKey);
      expect(await visibleText(opened.page)).toContain("Shown Org");
      await plant(opened, await sessionIdOf(other), "/api");

      await sendTestDelivery(opened, "/shadowed");
      await opened.page.getByLabel("API key").waitFor();
      expect(await visibleText(opened.page)).toContain("More than one session cookie was sent; sign in again");
      expect(delivered("/shadowed")).toBe(0);
      // The answer expired both cookies, the planted one at its own path included.
      const left = await opened.page.context().cookies(harness.base);
      expect(left.filter((cookie) => cookie.name === "punctual_session")).toEqual([]);

      await signIn(opened.page, harness.base, "organization", mine.apiKey);
      await sendTestDelivery(opened, "/after-sign-in");
      await expect.poll(() => visibleText(opened.page)).toContain("The receiver accepted the delivery");
      expect(delivered("/after-sign-in")).toBe(1);
      expect(opened.errors).toEqual([]);
    } finally {
      await opened.close();
    }
  });

  it("refuses a call once the cookie was replaced by another organization's, then shows that organization", async () => {
    const mine = await createTestOrganization(harness.context, "First Org");
    const other = await createTestOrganization(harness.context, "Replacing Org");
    const opened = await openPage(harness);
    try {
      await signIn(opened.page, harness.base, "organization", mine.apiKey);
      expect(await visibleText(opened.page)).toContain("First Org");
      // Same name, host and path: the browser replaces the console's cookie.
      await plant(opened, await sessionIdOf(other), "/");

      await sendTestDelivery(opened, "/replaced");
      await opened.page.getByLabel("API key").waitFor();
      expect(await visibleText(opened.page)).toContain("another organization's than the page's");
      expect(delivered("/replaced")).toBe(0);

      // Loaded again, the console asks who it is with the cookie the API uses, and says so.
      await opened.page.goto(`${harness.base}/console`, { waitUntil: "domcontentloaded" });
      await opened.page.getByRole("button", { name: "Sign out" }).waitFor();
      const text = await visibleText(opened.page);
      expect(text).toContain("Replacing Org");
      expect(text).not.toContain("First Org");
    } finally {
      await opened.close();
    }
  });
});
