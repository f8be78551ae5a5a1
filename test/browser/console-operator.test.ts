import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization } from "../support/context.ts";
import {
  apiCall,
  type ConsoleHarness,
  HORIZONTAL_OVERFLOW,
  heading,
  inPage,
  openPage,
  PAGE_STORAGE,
  screenshot,
  seriousViolations,
  signIn,
  skipBrowserTests,
  startConsoleHarness,
  tabTo,
  visibleText,
} from "./console-support.ts";

// The console as the operator sees it (ADMIN_TOKEN), in headless Chromium against the real API and
// a real worker. `SCREENSHOTS=1 pnpm exec vitest run test/browser` also writes docs/console-operator.png.

const ADMIN_TOKEN = "console-operator-Zt7mQ2pR9c";

describe.skipIf(skipBrowserTests())("the console for the operator, in headless Chromium", () => {
  let harness: ConsoleHarness;

  beforeAll(async () => {
    harness = await startConsoleHarness({ ADMIN_TOKEN });
  }, 60_000);

  afterAll(async () => {
    await harness?.close();
  });

  it("signs in with the admin token, refuses a wrong one, and keeps nothing of the token in the page", async () => {
    const { page, errors, outside, close } = await openPage(harness);
    try {
      await page.goto(`${harness.base}/console`, { waitUntil: "domcontentloaded" });
      await page.getByLabel("The operator").check();
      await page.getByLabel("Admin token").fill("not-the-token");
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => visibleText(page)).toContain("Invalid admin token");

      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      expect(await heading(page)).toBe("Organizations");
      const kept = await inPage<Record<string, string>>(page, PAGE_STORAGE);
      expect(kept.cookie).toBe("");
      for (const place of [kept.local, kept.session, kept.html] as string[]) expect(place).not.toContain(ADMIN_TOKEN);
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await close();
    }
  });

  it("creates an organization and shows its API key and signing secret once", async () => {
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.getByLabel("Name").fill("Created In Console");
      await page.getByLabel("Owner's email").fill("console-owner@example.com");
      await page.getByRole("button", { name: "Create", exact: true }).click();
      const dialog = page.getByRole("dialog", { name: "Organization created" });
      await dialog.waitFor();
      const apiKey = (await dialog.getByLabel("API key").textContent()) ?? "";
      expect(apiKey).toMatch(/^pk_/);
      expect(await dialog.getByLabel("Signing secret").textContent()).toMatch(/^whsec_/);
      // The key works for the new organization's API.
      expect((await apiCall(harness.base, apiKey, "GET", "/api/events")).status).toBe(200);

      await dialog.getByRole("button", { name: "Done" }).click();
      await dialog.waitFor({ state: "hidden" });
      expect(await visibleText(page)).not.toContain(apiKey);
      await page.getByRole("row").filter({ hasText: "Created In Console" }).waitFor();
      expect(await page.getByRole("row").filter({ hasText: "Created In Console" }).textContent()).toContain(
        "console-owner@example.com",
      );
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("creates an API key shown once, revokes it, and the key stops working (401); adds a member", async () => {
    const org = await createTestOrganization(harness.context, "Keys Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.getByRole("link", { name: "Keys Org" }).click();
      await expect.poll(() => heading(page)).toBe("Keys Org");
      await page.getByRole("button", { name: "Create an API key" }).click();
      const dialog = page.getByRole("dialog", { name: "New API key" });
      await dialog.waitFor();
      const apiKey = ((await dialog.locator("output").textContent()) ?? "").trim();
      expect(apiKey).toMatch(/^pk_/);
      expect(apiKey).not.toBe(org.apiKey);
      expect((await apiCall(harness.base, apiKey, "GET", "/api/events")).status).toBe(200);
      await screenshot(page, "console-operator.png", { fullPage: false });

      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "hidden" });
      // Shown once: the page no longer has it anywhere, only its prefix.
      expect(await inPage<Record<string, string>>(page, PAGE_STORAGE)).not.toEqual(
        expect.objectContaining({ html: expect.stringContaining(apiKey) }),
      );
      const prefix = apiKey.slice(0, 11);
      await page.getByRole("button", { name: `Revoke key ${prefix}` }).click();
      const confirm = page.getByRole("dialog", { name: "Revoke the API key?" });
      await confirm.getByRole("button", { name: "Revoke the key" }).click();
      await expect.poll(() => visibleText(page)).toContain(`API key ${prefix}… is revoked`);

      await page.getByLabel("Add a member by email").fill("second-member@example.com");
      await page.getByRole("button", { name: "Add member" }).click();
      await expect.poll(() => visibleText(page)).toContain("second-member@example.com is now a member.");
      await expect.poll(() => page.locator("dl.details").first().textContent()).toMatch(/Members\s*2/);
      expect(await harness.context.db.membership.count({ where: { orgId: org.orgId } })).toBe(2);

      const refused = await apiCall(harness.base, apiKey, "GET", "/api/events");
      expect(refused.status).toBe(401);
      expect(refused.body).toEqual({ message: "Invalid API key" });
      // The organization's first key is untouched.
      expect((await apiCall(harness.base, org.apiKey, "GET", "/api/events")).status).toBe(200);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("rotates an API key: the new one is shown once and the old one stops working", async () => {
    const org = await createTestOrganization(harness.context, "Rotate Key Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.goto(`${harness.base}/console/organizations/${org.orgId}`, { waitUntil: "domcontentloaded" });
      await page.getByRole("button", { name: /^Rotate key / }).click();
      const dialog = page.getByRole("dialog", { name: "API key replaced" });
      await dialog.waitFor();
      const replacement = ((await dialog.locator("output").textContent()) ?? "").trim();
      expect((await apiCall(harness.base, replacement, "GET", "/api/events")).status).toBe(200);
      expect((await apiCall(harness.base, org.apiKey, "GET", "/api/events")).status).toBe(401);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("rotates the signing secret, shows until when the previous one still signs, and ends the overlap early", async () => {
    const org = await createTestOrganization(harness.context, "Secret Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.goto(`${harness.base}/console/organizations/${org.orgId}`, { waitUntil: "domcontentloaded" });
      await page.getByRole("button", { name: "Rotate the signing secret" }).click();
      const dialog = page.getByRole("dialog", { name: "Signing secret rotated" });
      await dialog.waitFor();
      const secret = ((await dialog.locator("output").textContent()) ?? "").trim();
      expect(secret).toMatch(/^whsec_/);
      expect(secret).not.toBe(org.signingSecret);
      expect(await dialog.textContent()).toContain("signatures with both secrets until");
      await dialog.getByRole("button", { name: "Done" }).click();

      await expect.poll(() => visibleText(page)).toContain("the previous secret still signs deliveries until");
      const stored = await harness.context.db.organization.findUniqueOrThrow({ where: { id: org.orgId } });
      expect(stored.previousSecretValidUntil).toBeInstanceOf(Date);

      await page.getByRole("button", { name: "End the overlap now" }).click();
      await expect.poll(() => visibleText(page)).toContain("One secret signs deliveries");
      const ended = await harness.context.db.organization.findUniqueOrThrow({ where: { id: org.orgId } });
      expect(ended.previousSecretValidUntil).toBeNull();
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("shows service health: queue depths, the live workers, the reconciler, failure notices and Bull Board", async () => {
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.getByRole("link", { name: "Service health" }).click();
      await expect.poll(() => visibleText(page)).toMatch(/Workers alive \(1\)/);
      const text = await visibleText(page);
      for (const shown of ["events", "cron", "maintenance", "Reconciler", "Failure notices"])
        expect(text).toContain(shown);
      const bullBoard = page.getByRole("link", { name: /Bull Board/ });
      expect(await bullBoard.getAttribute("href")).toBe("/admin/queues");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("works by keyboard alone and has no serious or critical accessibility violation, wide or narrow", async () => {
    const org = await createTestOrganization(harness.context, "Keyboard Operator Org");
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const { page, errors, outside, close } = await openPage(harness, viewport);
      try {
        await signIn(page, harness.base, "operator", ADMIN_TOKEN);
        expect(await seriousViolations(page), `organizations at ${viewport.width}px`).toEqual([]);

        // Tab reaches the organization's link; Enter opens it; Tab reaches "Create an API key".
        await page.getByRole("link", { name: "Keyboard Operator Org", exact: true }).waitFor();
        expect(await tabTo(page, /^Keyboard Operator Org$/, 60)).toBe(true);
        await page.keyboard.press("Enter");
        await expect.poll(() => heading(page)).toBe("Keyboard Operator Org");
        await page
          .getByRole("row")
          .filter({ hasText: org.apiKey.slice(0, 11) })
          .waitFor();
        expect(await seriousViolations(page), `organization at ${viewport.width}px`).toEqual([]);
        expect(await tabTo(page, /^Create an API key$/, 60)).toBe(true);
        await page.keyboard.press("Enter");
        const dialog = page.getByRole("dialog", { name: "New API key" });
        await dialog.waitFor();
        expect(await seriousViolations(page), `key dialog at ${viewport.width}px`).toEqual([]);
        await page.keyboard.press("Escape");
        await dialog.waitFor({ state: "hidden" });

        await page.goto(`${harness.base}/console/health`, { waitUntil: "domcontentloaded" });
        await page.getByRole("heading", { name: /Workers alive/ }).waitFor();
        expect(await seriousViolations(page), `health at ${viewport.width}px`).toEqual([]);
        expect(await inPage<number>(page, HORIZONTAL_OVERFLOW)).toBeLessThanOrEqual(0);
        expect(errors).toEqual([]);
        expect(outside).toEqual([]);
      } finally {
        await close();
      }
    }
  }, 120_000);
});
