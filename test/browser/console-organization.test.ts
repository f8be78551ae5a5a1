import { newId } from "@punctual/core";
import type { Request } from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestOrganization, type TestOrganization } from "../support/context.ts";
import { statusOf } from "../support/events.ts";
import { type Receiver, startReceiver } from "../support/receiver.ts";
import {
  apiCall,
  type ConsoleHarness,
  FOCUS_IN_DIALOG,
  FOCUS_OUTLINE,
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

// The console as an organization sees it, in headless Chromium against the real API, a real worker,
// Postgres, Redis and a receiver on loopback. `SCREENSHOTS=1 pnpm exec vitest run test/browser` also
// writes docs/console-overview.png and docs/console-event.png.

const ADMIN_TOKEN = "console-org-Hq4vN8sLw2Xk";

describe.skipIf(skipBrowserTests())("the console for an organization, in headless Chromium", () => {
  let harness: ConsoleHarness;
  let receiver: Receiver;
  /** Receiver paths that answer 500 while listed here. */
  const failing = new Set<string>();

  beforeAll(async () => {
    // One quick retry: a failing destination is final within a second.
    harness = await startConsoleHarness({ ADMIN_TOKEN, RETRY_DELAYS_MS: "200" });
    receiver = await startReceiver({ status: (_n, req: Request) => (failing.has(req.path) ? 500 : 200) });
  }, 60_000);

  afterAll(async () => {
    await receiver?.close();
    await harness?.close();
  });

  const inSeconds = (seconds: number) => new Date(Date.now() + seconds * 1000).toISOString();
  const destination = (path: string) => receiver.url.replace(/\/hook$/, path);

  async function newOrganization(name: string): Promise<TestOrganization> {
    return createTestOrganization(harness.context, name);
  }

  async function scheduleThroughApi(org: TestOrganization, path: string, payload = '{"order":42}'): Promise<string> {
    const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
      payload,
      destination: destination(path),
      // Far enough ahead that a slow machine's request still arrives before it, and the list shows it Pending first.
      scheduledTime: inSeconds(3),
    });
    expect(created.status).toBe(200);
    return (created.body as { id: string }).id;
  }

  async function failedEvent(org: TestOrganization, path: string): Promise<string> {
    failing.add(path);
    const id = await scheduleThroughApi(org, path);
    await expect.poll(() => statusOf(harness.context, id)).toBe("Failed To Send");
    return id;
  }

  it("signs in with an API key, keeps nothing of the key in the page, and signs out", async () => {
    const org = await newOrganization("Sign-in Org");
    const { page, outside, errors, close } = await openPage(harness);
    try {
      const response = await page.goto(`${harness.base}/console`, { waitUntil: "domcontentloaded" });
      expect(response?.status()).toBe(200);
      expect(response?.headers()["content-security-policy"]).toContain("script-src 'self'");

      // A wrong key is refused with the API's sentence.
      await page.getByLabel("API key").fill("pk_not-a-key");
      await page.getByRole("button", { name: "Sign in" }).click();
      await expect.poll(() => visibleText(page)).toContain("Invalid API key");

      await signIn(page, harness.base, "organization", org.apiKey);
      expect(await visibleText(page)).toContain("Sign-in Org");
      // The session is an HttpOnly cookie: the page's script sees no cookie and stores nothing.
      const kept = await inPage<Record<string, string>>(page, PAGE_STORAGE);
      expect(kept.cookie).toBe("");
      for (const place of [kept.local, kept.session, kept.html] as string[]) expect(place).not.toContain(org.apiKey);

      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByLabel("API key").waitFor();
      expect((await page.request.get(`${harness.base}/console/api/session`)).status()).toBe(401);
      expect(errors).toEqual([]);
      expect(outside).toEqual([]);
    } finally {
      await close();
    }
  });

  it("shows an event scheduled through the API turning Sent in the events list", async () => {
    const org = await newOrganization("Watch Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      const id = await scheduleThroughApi(org, "/watched");
      await page.getByRole("link", { name: "Events", exact: true }).click();
      const row = page.getByRole("row").filter({ hasText: id });
      await row.waitFor();
      // The list refreshes itself: the same row turns Sent without a reload.
      await expect.poll(() => row.textContent(), { timeout: 20_000 }).toContain("Sent");
      expect(await statusOf(harness.context, id)).toBe("Sent");
      expect(receiver.deliveriesOf(id)).toHaveLength(1);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("filters the events list by status and time window, pages through it by cursor, and finds an event by id", async () => {
    const org = await newOrganization("Filter Org");
    const later = (hours: number) => new Date(Date.now() + hours * 3_600_000).toISOString();
    const pending: string[] = [];
    for (let n = 0; n < 55; n++) {
      const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
        payload: "{}",
        destination: destination("/later"),
        scheduledTime: later(n < 5 ? 48 : 2),
      });
      pending.push((created.body as { id: string }).id);
    }
    const cancelled = pending[0] as string;
    expect(
      (await apiCall(harness.base, org.apiKey, "PUT", `/api/events/${cancelled}`, { status: "Cancelled" })).status,
    ).toBe(200);
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Events", exact: true }).click();
      await expect.poll(() => visibleText(page)).toContain("Page 1: 50 events");
      await page.getByRole("button", { name: "Next page →" }).click();
      await expect.poll(() => visibleText(page)).toContain("Page 2: 5 events");
      expect(await page.getByRole("button", { name: "Next page →" }).isDisabled()).toBe(true);
      await page.getByRole("button", { name: "← Previous page" }).click();
      await expect.poll(() => visibleText(page)).toContain("Page 1: 50 events");

      await page.getByLabel("Status").selectOption("Cancelled");
      await page.getByRole("button", { name: "Apply filter" }).click();
      await expect.poll(() => visibleText(page)).toContain("Page 1: 1 event,");
      expect(page.url()).toContain("status=Cancelled");
      await page.getByRole("row").filter({ hasText: cancelled }).waitFor();

      // The 4 other events due in 48 h, by a window on the scheduled time (entered in the browser's zone).
      await page.getByLabel("Status").selectOption("Pending");
      const local = (iso: string) => {
        const date = new Date(iso);
        const pad = (n: number) => String(n).padStart(2, "0");
        return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
      };
      await page.getByLabel(/^From/).fill(local(later(24)));
      await page.getByRole("button", { name: "Apply filter" }).click();
      await expect.poll(() => visibleText(page)).toContain("Page 1: 4 events");
      expect(page.url()).toContain("scheduledStartDate=");

      await page.getByLabel("Find an event by id").fill(pending[30] as string);
      await page.getByRole("button", { name: "Open" }).click();
      await expect.poll(() => heading(page)).toContain(pending[30] as string);
      await page.goBack();
      await page.getByLabel("Find an event by id").fill("evt_missing");
      await page.getByRole("button", { name: "Open" }).click();
      await expect.poll(() => visibleText(page)).toContain("No event evt_missing in this organization");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("sends a test delivery from the console and shows the receiver's answer", async () => {
    const org = await newOrganization("Test Delivery Org");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Test delivery" }).click();
      await page.getByLabel("Destination").fill(destination("/test-delivery"));
      await page.getByLabel("Payload").fill('{"ping":true}');
      await page.getByRole("button", { name: "Send test delivery" }).click();
      await expect.poll(() => visibleText(page)).toContain("The receiver accepted the delivery");
      const text = await visibleText(page);
      expect(text).toMatch(/Response status\s*200/);
      expect(text).toContain('{"received":true}');
      const delivered = receiver.deliveries.filter((delivery) => delivery.path === "/test-delivery");
      expect(delivered).toHaveLength(1);
      expect(delivered[0]?.rawBody).toContain('{\\"ping\\":true}');
      // A test delivery creates no event.
      expect(await harness.context.db.event.count({ where: { orgId: org.orgId } })).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("opens a failed event with its attempts and replays it into a new event that is Sent", async () => {
    const org = await newOrganization("Replay Org");
    const failedId = await failedEvent(org, "/replay-one");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.goto(`${harness.base}/console/events/${failedId}`, { waitUntil: "domcontentloaded" });
      await expect.poll(() => visibleText(page)).toContain("Attempt 2: failed");
      const text = await visibleText(page);
      expect(text).toContain("Failed To Send");
      expect(text).toContain("Attempt 1: failed");
      expect(text).toMatch(/Response\s*500/);
      expect(text).toContain('"order": 42');
      await screenshot(page, "console-event.png");

      failing.delete("/replay-one");
      await page.getByRole("button", { name: "Replay" }).click();
      await page.waitForURL((url) => !url.pathname.endsWith(failedId));
      const replayId = new URL(page.url()).pathname.split("/").pop() as string;
      expect(replayId).toMatch(/^evt_/);
      expect(replayId).not.toBe(failedId);
      await expect.poll(() => visibleText(page)).toContain(`Replay of\n${failedId}`);
      await expect.poll(() => statusOf(harness.context, replayId)).toBe("Sent");
      // The page follows the new event until it is delivered.
      await expect.poll(() => visibleText(page)).toContain("Attempt 1: delivered");
      const stored = await harness.context.db.event.findUniqueOrThrow({ where: { id: replayId } });
      expect(stored.payload).toBe('{"order":42}');
      expect(stored.destination).toBe(destination("/replay-one"));
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("reschedules a Pending event to a time entered in the browser's zone, then cancels it", async () => {
    const org = await newOrganization("Reschedule Org");
    const created = await apiCall(harness.base, org.apiKey, "POST", "/api/events", {
      payload: "{}",
      destination: destination("/rescheduled"),
      scheduledTime: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const id = (created.body as { id: string }).id;
    // 15:30 in Paris, 30 days from now: the instant is 15:30 minus Paris's offset from UTC that day.
    const day = new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10);
    const offset = new Intl.DateTimeFormat("en-US", { timeZone: "Europe/Paris", timeZoneName: "shortOffset" })
      .formatToParts(new Date(`${day}T12:00:00Z`))
      .find((part) => part.type === "timeZoneName")?.value;
    const hours = Number(offset?.replace("GMT", "") || 0);
    const expected = new Date(Date.parse(`${day}T15:30:00Z`) - hours * 3_600_000).toISOString();
    const { page, errors, close } = await openPage(harness, undefined, "Europe/Paris");
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.goto(`${harness.base}/console/events/${id}`, { waitUntil: "domcontentloaded" });
      await page.getByRole("button", { name: "Reschedule" }).click();
      const dialog = page.getByRole("dialog", { name: "Reschedule the event" });
      await dialog.getByLabel("New time (Europe/Paris)").fill(`${day}T15:30`);
      await dialog.getByRole("button", { name: "Save" }).click();
      await expect.poll(() => visibleText(page)).toContain("The event is rescheduled.");
      const moved = await harness.context.db.event.findUniqueOrThrow({ where: { id } });
      expect(moved.scheduledTime.toISOString()).toBe(expected);
      expect(moved.status).toBe("Pending");

      await page.getByRole("button", { name: "Cancel the event" }).click();
      await expect.poll(() => visibleText(page)).toContain("The event is cancelled");
      await expect.poll(() => statusOf(harness.context, id)).toBe("Cancelled");
      expect(await page.getByRole("button", { name: "Reschedule" }).count()).toBe(0);
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("replays every failure of a filter in one action", async () => {
    const org = await newOrganization("Bulk Org");
    const failed = [await failedEvent(org, "/bulk"), await failedEvent(org, "/bulk")];
    failing.delete("/bulk");
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Events", exact: true }).click();
      await page.getByLabel("Status").selectOption("Failed To Send");
      await page.getByRole("button", { name: "Apply filter" }).click();
      for (const id of failed) await page.getByRole("row").filter({ hasText: id }).waitFor();

      await page.getByRole("button", { name: /Replay every/ }).click();
      const dialog = page.getByRole("dialog", { name: "Replay failures" });
      await dialog.waitFor();
      await dialog.getByRole("button", { name: "Replay them" }).click();
      await expect.poll(() => visibleText(page)).toContain("Replayed 2 events");

      const replays = await harness.context.db.event.findMany({ where: { orgId: org.orgId, replayOf: { not: null } } });
      expect(replays.map((event) => event.replayOf).sort()).toEqual([...failed].sort());
      for (const replay of replays) await expect.poll(() => statusOf(harness.context, replay.id)).toBe("Sent");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("edits a cron job with a live preview of its next firing times and a warning for one that never fires", async () => {
    const org = await newOrganization("Cron Org");
    const created = await apiCall(harness.base, org.apiKey, "POST", "/api/cronjobs", {
      payload: "{}",
      destination: destination("/cron"),
      expression: "0 9 * * *",
      timezone: "Europe/Paris",
      labels: { team: "ops", tier: "gold" },
      callbackUrl: destination("/cron-outcome"),
    });
    expect(created.status).toBe(200);
    const cronId = (created.body as { id: string }).id;
    // Four past runs as the worker records them: three sent, the last one failed.
    for (const [n, status] of ["Sent", "Sent", "Sent", "Failed To Send"].entries()) {
      const scheduledFor = new Date(Date.now() - (4 - n) * 86_400_000);
      await harness.context.db.cronRun.create({
        data: {
          id: newId("run"),
          cronJobId: cronId,
          orgId: org.orgId,
          cron: "0 9 * * *",
          scheduledFor,
          status,
          attempts: status === "Sent" ? 1 : 2,
          responseStatus: status === "Sent" ? 200 : 503,
          requestData: "{}",
          error: status === "Sent" ? null : "Receiver answered 503",
          durationMs: 40 + n,
          finishedAt: new Date(scheduledFor.getTime() + 60),
          createdAt: new Date(scheduledFor.getTime() + 5 + n),
        },
      });
    }
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      await page.getByRole("link", { name: "Cron jobs" }).click();
      await page.getByRole("link", { name: cronId }).click();
      const preview = page.locator("section.preview");
      await expect.poll(() => preview.locator("li").count()).toBe(5);
      // The details card shows the job's labels as chips and its callback URL, as an event's page does.
      const details = page.getByRole("region", { name: "Details", exact: true });
      expect(await details.locator(".label-tags .tag").allTextContents()).toEqual(["team:ops", "tier:gold"]);
      expect(await details.textContent()).toContain(`Callback URL${destination("/cron-outcome")}`);
      // The runs: a chart of outcomes and lateness, and the same runs in a table.
      await page.getByRole("img", { name: /Runs by scheduled time and lateness: 3 sent .*, 1 failed/ }).waitFor();
      expect(await page.locator("canvas").count()).toBe(1);
      const runs = page.getByRole("region", { name: "Runs", exact: true }).getByRole("row");
      expect(await runs.count()).toBe(5);
      expect(await runs.nth(1).textContent()).toContain("Receiver answered 503");

      const expression = page.getByLabel("Cron expression");
      await expression.fill("30 6 * * 1");
      await expect
        .poll(() => preview.locator("li").allTextContents())
        .toSatisfy(
          (times: string[]) => times.length === 5 && times.every((time) => time.includes("06:30") && /Mon/.test(time)),
        );

      await expression.fill("0 0 30 2 *");
      await expect.poll(() => preview.textContent()).toMatch(/never fires/i);

      await expression.fill("15 7 * * *");
      await expect.poll(() => preview.locator("li").first().textContent()).toContain("07:15");
      await page.getByRole("button", { name: "Save changes" }).click();
      await expect.poll(() => visibleText(page)).toContain("Saved");
      const stored = await harness.context.db.cronJob.findUniqueOrThrow({ where: { id: cronId } });
      expect(stored.expression).toBe("15 7 * * *");
      expect(stored.timezone).toBe("Europe/Paris");

      await page.getByRole("button", { name: "Disable" }).click();
      await page.getByRole("button", { name: "Enable" }).waitFor();
      expect((await harness.context.db.cronJob.findUniqueOrThrow({ where: { id: cronId } })).status).toBe("Disabled");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("shows the overview: outcomes per hour, lateness, the month's usage and the destinations failing most", async () => {
    const org = await newOrganization("Overview Org");
    const ids = await Promise.all([
      ...Array.from({ length: 6 }, () => scheduleThroughApi(org, "/overview-ok")),
      failedEvent(org, "/overview-failing"),
      failedEvent(org, "/overview-failing"),
    ]);
    for (const id of ids) await expect.poll(() => statusOf(harness.context, id)).toMatch(/^(Sent|Failed To Send)$/);
    const { page, errors, close } = await openPage(harness);
    try {
      await signIn(page, harness.base, "organization", org.apiKey);
      expect(await heading(page)).toBe("Overview");
      await page.locator("canvas").first().waitFor();
      const text = await visibleText(page);
      expect(text).toMatch(/Sent\s*6/);
      expect(text).toMatch(/Failed\s*2/);
      expect(text).toMatch(/8\s*of 1,000 events/);
      expect(text).toContain(destination("/overview-failing"));
      // Both charts are drawn, and each says what it shows.
      expect(await page.locator("canvas").count()).toBeGreaterThanOrEqual(2);
      expect(await page.getByRole("img", { name: /Deliveries per hour by outcome: 6 sent, 2 failed/ }).count()).toBe(1);
      expect(await page.getByRole("img", { name: /lateness/ }).count()).toBe(1);
      await screenshot(page, "console-overview.png");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("works by keyboard alone: Tab reaches and Enter activates the main actions", async () => {
    const org = await newOrganization("Keyboard Org");
    const failedId = await failedEvent(org, "/keyboard");
    failing.delete("/keyboard");
    const { page, errors, close } = await openPage(harness);
    try {
      await page.goto(`${harness.base}/console`, { waitUntil: "domcontentloaded" });
      expect(await tabTo(page, /^An organization$/)).toBe(true);
      expect(await tabTo(page, /^API key$/)).toBe(true);
      await page.keyboard.type(org.apiKey);
      await page.keyboard.press("Enter");
      await page.getByRole("button", { name: "Sign out" }).waitFor();

      // The skip link comes first, then the sections.
      expect(await tabTo(page, /^Skip to content$/, 3)).toBe(true);
      expect(await tabTo(page, /^Events$/)).toBe(true);
      await page.keyboard.press("Enter");
      await expect.poll(() => heading(page)).toBe("Events");
      // The heading comes before the list's rows: Tab would pass the row not yet there.
      await page.getByRole("link", { name: failedId, exact: true }).waitFor();

      expect(await tabTo(page, new RegExp(`^${failedId}$`))).toBe(true);
      await page.keyboard.press("Enter");
      await expect.poll(() => heading(page)).toContain(failedId);

      await page.getByRole("button", { name: "Replay", exact: true }).waitFor();
      expect(await tabTo(page, /^Replay$/)).toBe(true);
      await page.keyboard.press("Enter");
      await page.waitForURL((url) => !url.pathname.endsWith(failedId));
      await expect.poll(() => visibleText(page)).toContain("Replay of");

      // A dialog takes the focus, keeps it, and Escape closes it.
      await page.getByRole("link", { name: "Events", exact: true }).click();
      await page.getByLabel("Status").selectOption("Failed To Send");
      await page.getByRole("button", { name: "Apply filter" }).press("Enter");
      await page.getByRole("button", { name: /^Replay every/ }).waitFor();
      expect(await tabTo(page, /^Replay every/)).toBe(true);
      await page.keyboard.press("Enter");
      const dialog = page.getByRole("dialog", { name: "Replay failures" });
      await dialog.waitFor();
      expect(await inPage<boolean>(page, FOCUS_IN_DIALOG)).toBe(true);
      await page.keyboard.press("Escape");
      await dialog.waitFor({ state: "hidden" });
      // Focus is visible: the focused control draws an outline.
      await page.keyboard.press("Tab");
      expect(await inPage<string>(page, FOCUS_OUTLINE)).not.toBe("none");
      expect(errors).toEqual([]);
    } finally {
      await close();
    }
  });

  it("has no serious or critical accessibility violation on any page, wide or narrow", async () => {
    const org = await newOrganization("Accessible Org");
    const eventId = await failedEvent(org, "/accessible");
    const cron = await apiCall(harness.base, org.apiKey, "POST", "/api/cronjobs", {
      payload: "{}",
      destination: destination("/accessible-cron"),
      expression: "*/30 * * * *",
      // Labels and a callback URL on its page, one label long enough to be cut short on a phone.
      labels: { team: "ops", campaign: "spring-".repeat(30) },
      callbackUrl: destination("/accessible-cron-outcome"),
    });
    const cronId = (cron.body as { id: string }).id;
    for (const viewport of [
      { width: 1280, height: 800 },
      { width: 390, height: 844 },
    ]) {
      const { page, errors, outside, close } = await openPage(harness, viewport);
      try {
        await page.goto(`${harness.base}/console`, { waitUntil: "domcontentloaded" });
        await page.getByLabel("API key").waitFor();
        expect(await seriousViolations(page), `sign-in at ${viewport.width}px`).toEqual([]);
        await signIn(page, harness.base, "organization", org.apiKey);
        for (const [path, ready] of [
          ["/", "canvas"],
          ["/events?status=Failed%20To%20Send", `text=${eventId}`],
          [`/events/${eventId}`, "text=Attempt 1"],
          ["/cron-jobs", `text=${cronId}`],
          [`/cron-jobs/${cronId}`, "section.preview li"],
          ["/test-delivery", "text=Send test delivery"],
        ] as const) {
          await page.goto(`${harness.base}/console${path}`, { waitUntil: "domcontentloaded" });
          await page.locator(ready).first().waitFor();
          expect(await seriousViolations(page), `${path} at ${viewport.width}px`).toEqual([]);
          // Nothing is wider than the window: no sideways scrolling of the page itself.
          const overflow = await inPage<number>(page, HORIZONTAL_OVERFLOW);
          expect(overflow, `${path} at ${viewport.width}px`).toBeLessThanOrEqual(0);
        }
        expect(errors).toEqual([]);
        expect(outside).toEqual([]);
      } finally {
        await close();
      }
    }
  }, 120_000);
});
