import { expect, it } from "vitest";
import { createDeliveryLull, type DeliveryActivity } from "./delivery-lull.ts";

/** Deliveries under the test's control: an instant to come, and sends that go quiet when told. */
class Deliveries {
  private quiet: (() => void)[] = [];
  private sendsQuiet = true;
  constructor(public nextInstant?: number) {}
  setBusy() {
    this.sendsQuiet = false;
  }
  settle() {
    this.sendsQuiet = true;
    for (const resolve of this.quiet) resolve();
    this.quiet = [];
  }
  readonly activity: DeliveryActivity = {
    nextInstant: () => this.nextInstant,
    whenQuiet: () => (this.sendsQuiet ? Promise.resolve() : new Promise<void>((resolve) => this.quiet.push(resolve))),
  };
}

const activity = (nextInstant?: number) => new Deliveries(nextInstant);
const later = (ms: number) => Date.now() + ms;

it("lets maintenance go at once when nothing is due within the guard and the sends are quiet", async () => {
  const deliveries = activity(later(10_000));
  const lull = createDeliveryLull(deliveries.activity, 500);
  const started = Date.now();
  await lull.until(later(5_000));
  expect(Date.now() - started).toBeLessThan(100);
});

it("waits past an instant due within the guard, then until its sends are quiet", async () => {
  const instant = later(200);
  const deliveries = activity(instant);
  const lull = createDeliveryLull(deliveries.activity, 500);
  let resolvedAt: number | undefined;
  void lull.until(later(5_000)).then(() => {
    resolvedAt = Date.now();
  });
  // The instant comes: its sends go out and are still unanswered when it has passed.
  await new Promise((resolve) => setTimeout(resolve, instant - Date.now() - 20));
  deliveries.setBusy();
  deliveries.nextInstant = undefined;
  await new Promise((resolve) => setTimeout(resolve, 150));
  expect(resolvedAt).toBeUndefined();
  const settledAt = Date.now();
  deliveries.settle();
  await expect.poll(() => resolvedAt).toBeDefined();
  expect(resolvedAt).toBeGreaterThanOrEqual(settledAt);
  expect(resolvedAt).toBeGreaterThan(instant);
});

it("gives up waiting at the deadline when the deliveries never leave room", async () => {
  const deliveries = activity();
  deliveries.setBusy();
  const lull = createDeliveryLull({ ...deliveries.activity, nextInstant: () => Date.now() + 100 }, 500);
  const started = Date.now();
  await lull.until(started + 300);
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(295);
  expect(waited).toBeLessThan(1_000);
});

it("lets every wait go at once when closed, and does not wait afterwards", async () => {
  const deliveries = activity();
  deliveries.setBusy();
  const lull = createDeliveryLull(deliveries.activity, 500);
  let released = false;
  void lull.until(later(60_000)).then(() => {
    released = true;
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(released).toBe(false);
  lull.close();
  await expect.poll(() => released).toBe(true);
  const started = Date.now();
  await lull.until(later(60_000));
  expect(Date.now() - started).toBeLessThan(50);
});
