import type { Request } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization } from "../support/context.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import {
  apiCall,
  type ConsoleHarness,
  openPage,
  seriousViolations,
  signIn,
  skipBrowserTests,
  startConsoleHarness,
  visibleText,
} from "./console-support.ts";

// Outcomes, bulk work and labels in the console, in headless Chromium against the real API, a real
// worker and a receiver on loopback: the events list filtered by labels and flow key and a bulk
// cancel of its pending events, the organization's webhooks, and an event's callback on its page.

const inHours = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();

describe.skipIf(skipBrowserTests())("outcomes, bulk work and labels in the console", () => {
  let harness: ConsoleHarness;
  let receiver: Receiver;

  beforeAll(async () => {
    harness = await startConsoleHarness({});
    // The callback's answer (202) differs from the delivery's (200): the page must show the callback's.
    receiver = await startReceiver({ status: (_n, req: Request) => (req.path === "/cb" ? 202 : 200) });
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await harness?.close();
  });

  it("filters events by labels and flow key in the address, and cancels the filter's pending events once confirmed", async () => {
    const org = await createTestOrganization(harness.context, "Labels Org");
    const create = async (labels: Record<string, string>, flowKey?: string) => {
      const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
        payload: "{}",
        destination: receiver.url,
        scheduledTime: inHours(1),
        labels,
        ...(flowKey ? { flowKey } : {}),
      });
      expect(created.status).toBe(200);
      return (created.body as { id: string }).id;
    };
    const ops = [await create({ team: "ops", tier: "gold" }), await create({ team: "ops" }, "billing")];
    const dev = await create({ team: "dev" });
    const statusOf = async (id: string) =>
      ((await apiCall(harness.base, org.apiKey, "GET", `/api/events/${id}`)).body as { status: string }).status;

    const { page, errors, outside, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Events" }).click();
      const shownIds = () => page.locator(".events-table tbody tr a.mono").allTextContents();
      await expect.poll(async () => (await shownIds()).length).toBe(3);

      const filters = page.getByRole("form", { name: "Filter events" });
      await filters.getByLabel("Labels").fill("team:ops");
      await filters.getByLabel("Flow key").fill("billing");
      await filters.getByRole("button", { name: "Apply filter" }).click();
      await expect.poll(shownIds).toEqual([ops[1]]);
      // Each row shows its event's labels as key:value chips.
      expect(await page.locator(".events-table tbody tr .label-tags .tag").allTextContents()).toEqual(["team:ops"]);
      const address = new URL(page.url()).searchParams;
      expect(address.getAll("label")).toEqual(["team:ops"]);
      expect(address.get("flowKey")).toBe("billing");

      await filters.getByLabel("Flow key").fill("");
      await filters.getByLabel("Labels").fill("team:ops tier:gold");
      await filters.getByRole("button", { name: "Apply filter" }).click();
      await expect.poll(shownIds).toEqual([ops[0]]);
      await filters.getByLabel("Labels").fill("team:ops");
      await filters.getByRole("button", { name: "Apply filter" }).click();
      await expect.poll(async () => (await shownIds()).sort()).toEqual([...ops].sort());
      // The filter survives a reload: it is the page's address.
      await page.reload();
      await expect.poll(async () => (await shownIds()).sort()).toEqual([...ops].sort());

      // Kept: the dialog counts the matching pending events, and "Keep them" cancels nothing.
      const bulk = page.getByRole("button", { name: "Cancel the Pending events of this filter" });
      await bulk.click();
      const dialog = page.getByRole("dialog", { name: "Cancel pending events" });
      await expect.poll(() => dialog.textContent()).toContain("2 Pending events match this filter.");
      expect(await seriousViolations(page)).toEqual([]);
      await dialog.getByRole("button", { name: "Keep them" }).click();
      expect(await Promise.all([...ops, dev].map(statusOf))).toEqual(["Pending", "Pending", "Pending"]);

      await bulk.click();
      await expect.poll(() => dialog.textContent()).toContain("2 Pending events match this filter.");
      await dialog.getByRole("button", { name: "Cancel them" }).click();
      await page.getByText("Cancelled 2 events.").waitFor();
      expect(await Promise.all([...ops, dev].map(statusOf))).toEqual(["Cancelled", "Cancelled", "Pending"]);
      await expect
        .poll(() => page.locator(".events-table tbody tr .badge").allTextContents())
        .toEqual([expect.stringContaining("Cancelled"), expect.stringContaining("Cancelled")]);
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await close();
    }
  });

  it("adds a webhook with its types from the navigation's Webhooks page, and deletes it once confirmed", async () => {
    const org = await createTestOrganization(harness.context, "Webhooks Org");
    const listed = async () =>
      ((await apiCall(harness.base, org.apiKey, "GET", "/api/webhooks")).body as { webhooks: unknown[] }).webhooks;
    const { page, errors, outside, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Webhooks" }).click();
      await page.getByText("No webhook yet.").waitFor();

      await page.getByRole("button", { name: "New webhook" }).click();
      const dialog = page.getByRole("dialog", { name: "New webhook" });
      await dialog.getByLabel("URL").fill(`${receiver.url}/ops`);
      // Without a type the form says so and adds nothing.
      await dialog.getByRole("button", { name: "Add the webhook" }).click();
      await dialog.getByText("Please choose at least one type of notice").waitFor();
      await dialog.getByRole("checkbox", { name: /^event\.failed/ }).check();
      await dialog.getByRole("checkbox", { name: /^quota\.reached/ }).check();
      expect(await seriousViolations(page)).toEqual([]);
      await dialog.getByRole("button", { name: "Add the webhook" }).click();
      const row = page.locator(".webhooks-table tbody tr");
      await expect.poll(() => row.count()).toBe(1);
      expect(await row.locator(".tag").allTextContents()).toEqual(["event.failed", "quota.reached"]);
      expect(await listed()).toEqual([
        expect.objectContaining({ url: `${receiver.url}/ops`, types: ["event.failed", "quota.reached"] }),
      ]);

      const remove = page.getByRole("button", { name: `Delete the webhook to ${receiver.url}/ops` });
      await remove.click();
      const confirm = page.getByRole("dialog", { name: "Delete the webhook?" });
      await confirm.getByRole("button", { name: "Keep it" }).click();
      expect(await listed()).toHaveLength(1);
      await remove.click();
      await confirm.getByRole("button", { name: "Delete it" }).click();
      await page.getByText("No webhook yet.").waitFor();
      expect(await listed()).toEqual([]);
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await close();
    }
  });

  it("schedules an event with labels and a callback URL from the form, and shows the callback's outcome on its page", async () => {
    const org = await createTestOrganization(harness.context, "Callback Org");
    const { page, errors, outside, close } = await openPage(harness, undefined, "UTC");
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Events" }).click();
      await page.getByRole("button", { name: "New event" }).click();
      const dialog = page.getByRole("dialog", { name: "New event" });
      await dialog.getByLabel("Destination").fill(receiver.url);
      // A few seconds ahead, in the page's zone (UTC): a time in the past is refused.
      await dialog.getByLabel("Scheduled time").fill(new Date(Date.now() + 4_000).toISOString().slice(0, 19));
      await dialog.getByLabel("Labels").fill("customer:42\nplan:pro");
      await dialog.getByLabel("Callback URL").fill(receiver.url.replace(/\/hook$/, "/cb"));
      await dialog.getByRole("button", { name: "Schedule the event" }).click();
      await page.waitForURL(/\/console\/events\/evt_/);
      const id = new URL(page.url()).pathname.split("/").at(-1) ?? "";
      const record = await apiCall(harness.base, org.apiKey, "GET", `/api/events/${id}`);
      expect(record.body).toMatchObject({
        labels: { customer: "42", plan: "pro" },
        callbackUrl: receiver.url.replace(/\/hook$/, "/cb"),
      });
      await expect.poll(() => visibleText(page)).toContain("customer:42");

      // The page follows the event on its own: delivered, then its callback answered 202.
      const section = page.getByRole("region", { name: "Callback of the outcome" });
      await expect
        .poll(async () => ((await section.count()) > 0 ? section.textContent() : ""), { timeout: 30_000 })
        .toMatch(/Callback\s*Sent \(event\.sent\)/);
      const text = await section.textContent();
      expect(text).toMatch(/Attempts\s*1(?!\d)/);
      expect(text).toMatch(/Last answer\s*HTTP 202/);
      expect(receiver.deliveries.filter((delivery) => delivery.path === "/cb")).toHaveLength(1);
      expect(await page.getByRole("region", { name: "Answer to the callback" }).textContent()).toBe(
        '{"received":true}',
      );
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await close();
    }
  });
});
