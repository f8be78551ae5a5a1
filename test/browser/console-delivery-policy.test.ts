import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization } from "../support/context.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import {
  apiCall,
  type ConsoleHarness,
  HORIZONTAL_OVERFLOW,
  inPage,
  openPage,
  PAGE_STORAGE,
  seriousViolations,
  signIn,
  skipBrowserTests,
  startConsoleHarness,
  visibleText,
} from "./console-support.ts";

// Delivery policies in the console (contract §10.1), in headless Chromium against the real API and a
// receiver on loopback: the effective policy of an event and of a cron job, a test delivery that
// tries one, and the organization's default with its edit form.

const SECRET = "Bearer s3cret-Zq81xLw";

/** A section's text as rendered, once it is there. */
async function regionText(page: Page, name: string): Promise<string> {
  const region = page.getByRole("region", { name });
  await region.waitFor();
  // biome-ignore lint/performance/useDomNodeTextContent: the rendered text is the point of the check
  return region.innerText();
}

describe.skipIf(skipBrowserTests())("delivery policies in the console, in headless Chromium", () => {
  let harness: ConsoleHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    harness = await startConsoleHarness({ RETRY_DELAYS_MS: "200" });
    receiver = await startReceiver();
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await harness?.close();
  });

  const destination = (path: string) => receiver.url.replace(/\/hook$/, path);
  const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

  it("shows an event's and a cron job's effective policy, secret header values redacted", async () => {
    const org = await createTestOrganization(harness.context, "Policy View Org");
    const event = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
      payload: '{"order":42}',
      destination: destination("/policy-event"),
      scheduledTime: inAnHour(),
      method: "PUT",
      body: "raw",
      timeoutMs: 5_000,
      headers: { Authorization: SECRET, "X-Source": "punctual" },
      retry: { delaysMs: [3_000, 5_000, 10_000], maxAgeMs: 3_600_000, stopOnStatus: [404, 410] },
    });
    expect(event.status).toBe(200);
    const cron = await apiCall(harness.base, org.apiKey, "POST", "/api/cronjobs", {
      payload: "{}",
      destination: destination("/policy-cron"),
      expression: "0 9 * * *",
      retry: { attempts: 5, backoff: "exponential", initialDelayMs: 1_000, maxDelayMs: 60_000, jitter: true },
    });
    expect(cron.status).toBe(200);
    const { page, errors, outside, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.goto(`${harness.base}/console/events/${(event.body as { id: string }).id}`);
      const text = await regionText(page, "Delivery policy");
      expect(text).toMatch(/Method\s*PUT/);
      expect(text).toMatch(/Body\s*raw: the payload itself/);
      expect(text).toMatch(/Timeout\s*5 s per attempt/);
      expect(text).toMatch(/Retries\s*3 retries: 3 s, 5 s, 10 s/);
      expect(text).toContain("no attempt starts later than 1 h after the scheduled time");
      expect(text).toContain("404, 410 end the delivery at once");
      expect(text).toMatch(/X-Source\s*punctual/);
      expect(text).toMatch(/Authorization\s*\[redacted\]/);
      const kept = await inPage<Record<string, string>>(page, PAGE_STORAGE);
      expect(kept.html).not.toContain("s3cret");

      await page.goto(`${harness.base}/console/cron-jobs/${(cron.body as { id: string }).id}`);
      await expect
        .poll(() => visibleText(page))
        .toContain("up to 5 retries, exponential from 1 s to 1 min, with jitter");
      const cronPolicy = await regionText(page, "Delivery policy");
      expect(cronPolicy).toMatch(/Method\s*POST/);
      expect(cronPolicy).toMatch(/Headers\s*none/);
      expect(cronPolicy).not.toContain("Deadline");
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await close();
    }
  });

  it("tries a method, a body mode, headers and a timeout in a test delivery, and shows a refusal's sentence", async () => {
    const org = await createTestOrganization(harness.context, "Policy Test Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Test delivery" }).click();
      await page.getByLabel("Destination").fill(destination("/policy-test"));
      await page.getByLabel("Payload").fill('{"ping":true}');
      await page.getByLabel("Method").selectOption("PATCH");
      await page.getByLabel("Body", { exact: true }).selectOption("raw");
      await page.getByLabel("Timeout (ms)").fill("5000");
      await page.getByRole("button", { name: "Add a header" }).click();
      await page.getByLabel("Header 1 name").fill("X-Trace");
      await page.getByLabel("Header 1 value").fill("t-1");
      await page.getByRole("button", { name: "Add a header" }).click();
      await page.getByLabel("Header 2 name").fill("Host");
      await page.getByLabel("Header 2 value").fill("example.com");
      await page.getByRole("button", { name: "Send test delivery" }).click();
      await expect.poll(() => visibleText(page)).toContain("Header 'Host' cannot be set");
      expect(receiver.deliveries.filter((delivery) => delivery.path === "/policy-test")).toHaveLength(0);

      await page.getByRole("button", { name: "Remove header 2 (Host)" }).click();
      await page.getByRole("button", { name: "Send test delivery" }).click();
      await expect.poll(() => visibleText(page)).toContain("The receiver accepted the delivery");
      const delivered = receiver.deliveries.filter((delivery) => delivery.path === "/policy-test");
      expect(delivered).toHaveLength(1);
      expect(delivered[0]?.method).toBe("PATCH");
      expect(delivered[0]?.headers["x-trace"]).toBe("t-1");
      expect(delivered[0]?.rawBody).toBe('{"ping":true}');
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("shows, edits and clears the organization's default policy, with the API's sentence on a refused save", async () => {
    const org = await createTestOrganization(harness.context, "Policy Default Org");
    const stored = async () =>
      (
        await harness.context.db.$queryRaw<{ delivery_policy: unknown }[]>`
          SELECT delivery_policy FROM organizations WHERE id = ${org.orgId}`
      )[0]?.delivery_policy;
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Settings" }).click();
      await expect.poll(() => visibleText(page)).toContain("No default");

      await page.getByLabel("Method").selectOption("PUT");
      await page.getByRole("button", { name: "Add a header" }).click();
      await page.getByLabel("Header 1 name").fill("Authorization");
      await page.getByLabel("Header 1 value").fill(SECRET);
      await page.getByLabel("Fixed delays").check();
      await page.getByLabel("Delays before each retry (ms)").fill("1000, 2000");
      await page.getByLabel("Stop at once on status").fill("404");
      // A timeout the API refuses: its sentence is shown and nothing is stored.
      await page.getByLabel("Timeout (ms)").fill("10");
      await page.getByRole("button", { name: "Save the default" }).click();
      await expect.poll(() => visibleText(page)).toContain("'timeoutMs' must be an integer from 1000 to 60000");
      expect(await stored()).toBeNull();

      await page.getByLabel("Timeout (ms)").fill("");
      await page.getByRole("button", { name: "Save the default" }).click();
      await expect.poll(() => visibleText(page)).toContain("The default is saved.");
      expect(await stored()).toEqual({
        method: "PUT",
        headers: { Authorization: SECRET },
        retry: { delaysMs: [1_000, 2_000], stopOnStatus: [404] },
      });
      const summary = await regionText(page, "Default delivery policy");
      expect(summary).toMatch(/Retries\s*2 retries: 1 s, 2 s/);
      expect(summary).toMatch(/Authorization\s*\[redacted\]/);
      expect(await inPage<Record<string, string>>(page, PAGE_STORAGE).then((kept) => kept.html)).not.toContain(
        "s3cret",
      );

      // The secret value is never shown: saving again asks for it rather than storing "[redacted]".
      expect(await page.getByLabel("Header 1 value").inputValue()).toBe("");
      await page.getByLabel("Method").selectOption("PATCH");
      await page.getByLabel("Header 1 value").evaluate((input) => input.removeAttribute("required"));
      await page.getByRole("button", { name: "Save the default" }).click();
      await expect.poll(() => visibleText(page)).toContain("Enter the value of the header 'Authorization' again");
      expect(await stored()).toMatchObject({ method: "PUT", headers: { Authorization: SECRET } });

      // A new event takes the default: its page shows it.
      const event = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
        payload: "{}",
        destination: destination("/policy-default"),
        scheduledTime: inAnHour(),
      });
      await page.goto(`${harness.base}/console/events/${(event.body as { id: string }).id}`);
      expect(await regionText(page, "Delivery policy")).toMatch(/Method\s*PUT[\s\S]*2 retries: 1 s, 2 s/);

      await page.goto(`${harness.base}/console/settings`);
      await page.getByRole("button", { name: "Clear the default" }).click();
      await expect.poll(() => visibleText(page)).toContain("The default is cleared.");
      expect(await stored()).toBeNull();
      expect((await apiCall(harness.base, org.apiKey, "GET", "/api/delivery-policy")).body).toEqual({});
      expect(await visibleText(page)).toContain("No default");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("has no serious or critical accessibility violation on the policy pages, wide or narrow", async () => {
    const org = await createTestOrganization(harness.context, "Policy Accessible Org");
    await apiCall(harness.base, org.apiKey, "PUT", "/api/delivery-policy", {
      headers: { "X-Api-Key": "k-1", "X-Source": "punctual" },
      retry: { attempts: 3, backoff: "exponential", initialDelayMs: 1_000, maxDelayMs: 8_000, jitter: false },
    });
    const event = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
      payload: "{}",
      destination: destination("/policy-accessible"),
      scheduledTime: inAnHour(),
    });
    const eventId = (event.body as { id: string }).id;
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const { page, errors, close } = await openPage(harness, viewport);
      try {
        await signIn(page, harness.base, "organization", org.apiKey);
        for (const [path, ready] of [
          [`/events/${eventId}`, "text=up to 3 retries"],
          ["/settings", "text=Save the default"],
          ["/test-delivery", "text=Send test delivery"],
        ] as const) {
          await page.goto(`${harness.base}/console${path}`, { waitUntil: "domcontentloaded" });
          await page.locator(ready).first().waitFor();
          if (path === "/test-delivery") await page.getByRole("button", { name: "Add a header" }).click();
          expect(await seriousViolations(page), `${path} at ${viewport.width}px`).toEqual([]);
          expect(await inPage<number>(page, HORIZONTAL_OVERFLOW), `${path} at ${viewport.width}px`).toBeLessThanOrEqual(
            0,
          );
        }
        expect(errors).toEqual([]);
      } finally {
        await close();
      }
    }
  }, 120_000);
});
