import { expect, it } from "vitest";
import { createInstantTimers } from "./instant-timers.ts";

it("hands every item of one instant over in one call, never before the instant, and forgets removed ones", async () => {
  const calls: { items: string[]; instant: number; at: number }[] = [];
  const clock = createInstantTimers<string>((items, instant) => calls.push({ items, instant, at: Date.now() }));
  const instant = Date.now() + 80;
  const later = instant + 40;
  clock.at(instant, "a");
  clock.at(instant, "b");
  const removeC = clock.at(instant, "c");
  const removeD = clock.at(later, "d");
  removeC();
  removeD();

  await expect.poll(() => calls.length).toBe(1);
  expect(calls[0]?.items).toEqual(["a", "b"]);
  expect(calls[0]?.instant).toBe(instant);
  expect(calls[0]?.at).toBeGreaterThanOrEqual(instant);
  // The instant whose only item was removed never fires.
  await new Promise((resolve) => setTimeout(resolve, later + 50 - Date.now()));
  expect(calls).toHaveLength(1);
});

it("names the earliest instant anything waits for, and none once nothing waits", () => {
  const clock = createInstantTimers<string>(() => {});
  expect(clock.next()).toBeUndefined();
  const base = Date.now() + 60_000;
  const removeLater = clock.at(base + 500, "later");
  const removeEarlier = clock.at(base, "earlier");
  expect(clock.next()).toBe(base);
  removeEarlier();
  expect(clock.next()).toBe(base + 500);
  removeLater();
  expect(clock.next()).toBeUndefined();
});
