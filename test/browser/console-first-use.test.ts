import { newId } from "@punctual/core";
import type { Request } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization } from "../support/context.ts";
import { statusOf } from "../support/events.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import {
  apiCall,
  type ConsoleHarness,
  HORIZONTAL_OVERFLOW,
  inPage,
  openPage,
  screenshot,
  signIn,
  skipBrowserTests,
  startConsoleHarness,
  visibleText,
} from "./console-support.ts";

// What a new user of the console runs into first, in headless Chromium against the real API, a real
// worker and a receiver on loopback: the session check at load, the events list's order and its
// phone layout, what a receiver answered, the charts' legends, the forms that create and delete,
// and the health page's word on failure notices. `SCREENSHOTS=1` also writes
// docs/console-events-390.png and docs/console-events-desktop.png.

const ADMIN_TOKEN = "console-first-use-Rk3vT8qLx2";
const PHONE = { width: 390, height: 844 };

describe.skipIf(skipBrowserTests())("the console on first use, in headless Chromium", () => {
  let harness: ConsoleHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    // One quick retry: a failing destination is final within a second.
    harness = await startConsoleHarness({ ADMIN_TOKEN, RETRY_DELAYS_MS: "200" });
    receiver = await startReceiver({ status: (_n, req: Request) => (req.path === "/missing" ? 404 : 200) });
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await harness?.close();
  });

  const inHours = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();

  it("checks the session at load without a failed request when signed out", async () => {
    const { page, errors, close } = await openPage(harness);
    const failed: string[] = [];
    page.on("response", (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    try {
      await page.goto(`${harness.base}/console`, { waitUntil: "domcontentloaded" });
      await page.getByLabel("API key").waitFor();
      expect(failed).toEqual([]);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("lists events newest first, oldest first from the sort control", async () => {
    const org = await createTestOrganization(harness.context, "Order Org");
    const ids: string[] = [];
    for (const hours of [1, 2, 3]) {
      const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
        payload: "{}",
        destination: receiver.url,
        scheduledTime: inHours(hours),
      });
      ids.push((created.body as { id: string }).id);
    }
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Events" }).click();
      const firstRow = page.locator(".events-table tbody tr").first();
      await expect.poll(() => firstRow.locator("a.mono").textContent()).toBe(ids[2]);
      await screenshot(page, "console-events-desktop.png");
      await page.getByLabel("Sort").selectOption("asc");
      await expect.poll(() => firstRow.locator("a.mono").textContent()).toBe(ids[0]);
      expect(new URL(page.url()).searchParams.get("order")).toBe("asc");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("at 390 px, shows each event as a card with its whole status, a one-line time and its labels cut to the card, and the sections on one line", async () => {
    const org = await createTestOrganization(harness.context, "Phone Org");
    const campaign = "spring-sale-".repeat(20);
    const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
      payload: "{}",
      destination: `${receiver.url.replace(/\/hook$/, "/missing")}`,
      scheduledTime: new Date(Date.now() + 500).toISOString(),
      labels: { customer: "42", campaign },
    });
    const id = (created.body as { id: string }).id;
    await expect.poll(() => statusOf(harness.context, id)).toBe("Failed To Send");
    const { page, errors, close } = await openPage(harness, PHONE);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      const nav = page.getByRole("navigation", { name: "Sections" });
      const link = nav.getByRole("link", { name: "Overview" });
      // One line of links: the list is no taller than one link (it scrolls sideways instead).
      const navBox = await nav.locator("ul").boundingBox();
      const linkBox = await link.boundingBox();
      expect(navBox && linkBox && navBox.height).toBeLessThan((linkBox?.height ?? 0) * 1.5);

      await nav.getByRole("link", { name: "Events" }).click();
      const badge = page.locator(".events-table tbody tr .badge").first();
      await expect.poll(() => badge.textContent()).toContain("Failed To Send");
      const badgeBox = await badge.boundingBox();
      expect(badgeBox).not.toBeNull();
      expect((badgeBox?.x ?? 0) + (badgeBox?.width ?? 0)).toBeLessThanOrEqual(PHONE.width);
      // Its text is not cut: the badge is as wide as its text.
      const cut = await badge.evaluate((element) => element.scrollWidth > element.clientWidth + 1);
      expect(cut).toBe(false);
      const time = page.locator(".events-table tbody tr time").first();
      const lineHeight = await inPage<number>(
        page,
        `parseFloat(getComputedStyle(document.querySelector(".events-table tbody tr time")).lineHeight)`,
      );
      expect((await time.boundingBox())?.height ?? 0).toBeLessThan(lineHeight * 1.5);
      // The labels are chips under the id, each within the window; the long one is cut, its title whole.
      const chips = page.locator(".events-table tbody tr .label-tags .tag");
      // In the order of the record's labels (jsonb's order of keys, not the order they were given in).
      const labels = (created.body as { labels: Record<string, string> }).labels;
      expect(await chips.allTextContents()).toEqual(Object.entries(labels).map(([key, value]) => `${key}:${value}`));
      expect(await chips.allTextContents()).toEqual(expect.arrayContaining(["customer:42", `campaign:${campaign}`]));
      for (const chip of await chips.all()) {
        const box = await chip.boundingBox();
        expect((box?.x ?? 0) + (box?.width ?? PHONE.width + 1)).toBeLessThanOrEqual(PHONE.width);
      }
      const long = chips.filter({ hasText: "campaign:" });
      expect(await long.evaluate((element) => element.scrollWidth > element.clientWidth)).toBe(true);
      expect(await long.getAttribute("title")).toBe(`campaign:${campaign}`);
      expect(await inPage<number>(page, HORIZONTAL_OVERFLOW)).toBeLessThanOrEqual(0);
      await screenshot(page, "console-events-390.png");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("shows what the receiver answered to each attempt", async () => {
    const org = await createTestOrganization(harness.context, "Answer Org");
    const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
      payload: "{}",
      destination: `${receiver.url.replace(/\/hook$/, "/missing")}`,
      scheduledTime: new Date(Date.now() + 500).toISOString(),
    });
    const id = (created.body as { id: string }).id;
    await expect.poll(() => statusOf(harness.context, id)).toBe("Failed To Send");
    const history = await apiCall(harness.base, org.apiKey, "GET", `/api/events/${id}`);
    const answered = expect.objectContaining({ responseStatus: 404, responseBody: '{"received":false}' });
    expect((history.body as { history: unknown[] }).history).toEqual([answered, answered]);
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.goto(`${harness.base}/console/events/${id}`);
      const answer = page.getByRole("region", { name: "Answer to attempt 1" });
      await expect.poll(() => answer.textContent()).toBe('{"received":false}');
      // The hourly chart: one failed delivery (a bar), one retried attempt (the dashed line), and
      // the window's totals in the legend while nothing is hovered.
      await page.getByRole("link", { name: "Overview" }).click();
      const legend = page.locator("figure.chart .u-legend").first();
      await expect.poll(() => legend.textContent()).toContain("Retried attempts1 in all");
      expect(await legend.textContent()).toContain("Failed deliveries1 in all");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("schedules an event from the form, with a flow key", async () => {
    const org = await createTestOrganization(harness.context, "Form Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Events" }).click();
      await page.getByRole("button", { name: "New event" }).click();
      const dialog = page.getByRole("dialog", { name: "New event" });
      await dialog.getByLabel("Destination").fill(receiver.url);
      await dialog.getByLabel("Payload").fill('{"hello":"form"}');
      await dialog.getByText("Delivery policy and flow (optional)").click();
      await dialog.getByLabel("Flow key").fill("form-flow");
      await dialog.getByRole("button", { name: "Schedule the event" }).click();
      await page.waitForURL(/\/console\/events\/evt_/);
      const id = decodeURIComponent(new URL(page.url()).pathname.split("/").at(-1) ?? "");
      const stored = await harness.context.db.event.findUniqueOrThrow({ where: { id } });
      expect({ payload: stored.payload, destination: stored.destination, flowKey: stored.flowKey }).toEqual({
        payload: '{"hello":"form"}',
        destination: receiver.url,
        flowKey: "form-flow",
      });
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("deletes a cron job only once confirmed, and its runs chart's legend says totals, not dashes", async () => {
    const org = await createTestOrganization(harness.context, "Delete Org");
    const created = await apiCall(harness.base, org.apiKey, "POST", "/api/cronjobs", {
      payload: "{}",
      destination: receiver.url,
      expression: "0 9 * * *",
      timezone: "UTC",
    });
    const cronId = (created.body as { id: string }).id;
    for (const [n, status] of ["Sent", "Sent", "Failed To Send"].entries()) {
      const scheduledFor = new Date(Date.now() - (10 - n * 3) * 86_400_000);
      await harness.context.db.cronRun.create({
        data: {
          id: newId("run"),
          cronJobId: cronId,
          orgId: org.orgId,
          cron: "0 9 * * *",
          scheduledFor,
          status,
          attempts: 1,
          responseStatus: status === "Sent" ? 200 : 500,
          requestData: "{}",
          error: status === "Sent" ? null : "Receiver answered 500",
          durationMs: 40,
          finishedAt: new Date(scheduledFor.getTime() + 60),
          createdAt: new Date(scheduledFor.getTime() + 5),
        },
      });
    }
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.goto(`${harness.base}/console/cron-jobs/${cronId}`);
      const legend = page.locator("figure.chart .u-legend");
      await expect.poll(() => legend.textContent()).toContain("2 runs");
      const text = await legend.textContent();
      expect(text).toContain("1 run");
      expect(text).not.toContain("--");

      await page.getByRole("button", { name: "Delete", exact: true }).click();
      const dialog = page.getByRole("dialog", { name: "Delete the cron job" });
      await dialog.getByRole("button", { name: "Cancel" }).click();
      expect(await harness.context.db.cronJob.count({ where: { id: cronId } })).toBe(1);
      await page.getByRole("button", { name: "Delete", exact: true }).click();
      await dialog.getByRole("button", { name: "Delete the cron job" }).click();
      await page.waitForURL(/\/console\/cron-jobs$/);
      await expect.poll(() => harness.context.db.cronJob.count({ where: { id: cronId } })).toBe(0);
      expect(await visibleText(page)).not.toContain(cronId);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("lists an organization's members on the operator's page, and a member just added", async () => {
    const org = await createTestOrganization(harness.context, "Members Org");
    const owner = await harness.context.db.organization.findUniqueOrThrow({
      where: { id: org.orgId },
      select: { owner: { select: { email: true } } },
    });
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.goto(`${harness.base}/console/organizations/${org.orgId}`);
      const members = page.getByRole("list", { name: "Members" });
      await expect.poll(() => members.textContent()).toContain(owner.owner.email);
      await page.getByLabel("Add a member by email").fill("new.member@example.com");
      await page.getByRole("button", { name: "Add member" }).click();
      await expect.poll(() => members.locator("li").count()).toBe(2);
      expect(await members.locator("li").nth(1).textContent()).toContain("new.member@example.com");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("says on the health page that failure notices are off while SMTP_URL is unset", async () => {
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "operator", ADMIN_TOKEN);
      await page.getByRole("link", { name: "Service health" }).click();
      await expect.poll(() => visibleText(page)).toContain("SMTP_URL is not set, so no failure notice is ever sent");
      expect(await visibleText(page)).toContain("never (SMTP_URL is not set)");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });
});
