import { expect, it } from "vitest";
import { createBookkeeping, type DeliveryActivity, QUIET_AFTER_MS } from "./bookkeeping.ts";

/** Deliveries under the test's control: an instant to come, and sends that go idle when told. */
class Deliveries {
  private idle: (() => void)[] = [];
  waiting = 0;
  readonly activity: DeliveryActivity;
  constructor(public nextInstant?: number) {
    const self = this;
    this.activity = {
      get waiting() {
        return self.waiting;
      },
      whenIdle: () =>
        self.waiting === 0 ? Promise.resolve() : new Promise<void>((resolve) => self.idle.push(resolve)),
      nextInstant: () => self.nextInstant,
    };
  }
  setBusy(waiting = 1) {
    this.waiting = waiting;
  }
  settle() {
    this.waiting = 0;
    for (const resolve of this.idle) resolve();
    this.idle = [];
  }
}

const activity = (nextInstant?: number) => new Deliveries(nextInstant);
const later = (ms: number) => Date.now() + ms;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

it("lets bookkeeping go at once when the sends are idle, and says whether a burst is being sent", async () => {
  const sends = activity();
  const bookkeeping = createBookkeeping(sends.activity, { maxWaitMs: 5_000 });
  expect(bookkeeping.busy).toBe(false);
  const started = Date.now();
  await bookkeeping.afterSends();
  expect(Date.now() - started).toBeLessThan(100);
  sends.setBusy(3);
  expect(bookkeeping.busy).toBe(true);
});

it("holds bookkeeping until the sends go idle", async () => {
  const sends = activity();
  sends.setBusy();
  const bookkeeping = createBookkeeping(sends.activity, { maxWaitMs: 5_000 });
  let done = false;
  void bookkeeping.afterSends().then(() => {
    done = true;
  });
  await sleep(150);
  expect(done).toBe(false);
  sends.settle();
  await expect.poll(() => done).toBe(true);
});

it("lets bookkeeping go QUIET_AFTER_MS after it was asked, once nothing waits for a slot, though attempts are still in flight", async () => {
  // Nothing waits for a slot, but the last answers never come.
  const inFlight: DeliveryActivity = {
    waiting: 0,
    whenIdle: () => new Promise(() => {}),
    nextInstant: () => undefined,
  };
  const bookkeeping = createBookkeeping(inFlight, { maxWaitMs: 10_000 });
  const started = Date.now();
  await bookkeeping.afterSends();
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(QUIET_AFTER_MS);
  expect(waited).toBeLessThan(QUIET_AFTER_MS + 500);
});

it("lets bookkeeping go after the one bound when the sends never go idle", async () => {
  const sends = activity();
  sends.setBusy();
  const bookkeeping = createBookkeeping(sends.activity, { maxWaitMs: 300 });
  const started = Date.now();
  await bookkeeping.afterSends();
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(295);
  expect(waited).toBeLessThan(1_000);
});

it("lets a maintenance run go at once when nothing is due soon and the sends are idle", async () => {
  const sends = activity(later(10_000));
  const pause = createBookkeeping(sends.activity, { aheadMs: 500, maxWaitMs: 5_000 }).maintenanceRun();
  const started = Date.now();
  await pause();
  expect(Date.now() - started).toBeLessThan(100);
});

it("holds a maintenance run past an instant due soon, then until its sends are idle", async () => {
  const instant = later(200);
  const sends = activity(instant);
  const pause = createBookkeeping(sends.activity, { aheadMs: 500, maxWaitMs: 5_000 }).maintenanceRun();
  let resolvedAt: number | undefined;
  void pause().then(() => {
    resolvedAt = Date.now();
  });
  // The instant comes: its sends go out and are still unanswered when it has passed.
  await sleep(instant - Date.now() - 20);
  sends.setBusy();
  sends.nextInstant = undefined;
  await sleep(150);
  expect(resolvedAt).toBeUndefined();
  const settledAt = Date.now();
  sends.settle();
  await expect.poll(() => resolvedAt).toBeDefined();
  expect(resolvedAt).toBeGreaterThanOrEqual(settledAt);
  expect(resolvedAt).toBeGreaterThan(instant);
});

it("bounds every pause of a maintenance run by the one bound from the run's start", async () => {
  const sends = activity();
  sends.setBusy();
  sends.nextInstant = undefined;
  const bookkeeping = createBookkeeping(
    { ...sends.activity, waiting: 1, nextInstant: () => Date.now() + 100 },
    { aheadMs: 500, maxWaitMs: 300 },
  );
  const started = Date.now();
  const pause = bookkeeping.maintenanceRun();
  await pause();
  const waited = Date.now() - started;
  expect(waited).toBeGreaterThanOrEqual(295);
  expect(waited).toBeLessThan(1_000);
  // The run's later pauses are past its bound: they do not wait again.
  const again = Date.now();
  await pause();
  expect(Date.now() - again).toBeLessThan(50);
});

it("ends maintenance waits at close, and later ones at once, while other bookkeeping keeps its rule", async () => {
  const sends = activity();
  sends.setBusy();
  const bookkeeping = createBookkeeping(sends.activity, { maxWaitMs: 60_000 });
  let maintenanceReleased = false;
  let linesReleased = false;
  void bookkeeping
    .maintenanceRun()()
    .then(() => {
      maintenanceReleased = true;
    });
  void bookkeeping.afterSends().then(() => {
    linesReleased = true;
  });
  await sleep(50);
  expect(maintenanceReleased).toBe(false);
  bookkeeping.close();
  await expect.poll(() => maintenanceReleased).toBe(true);
  const started = Date.now();
  await bookkeeping.maintenanceRun()();
  expect(Date.now() - started).toBeLessThan(50);
  expect(linesReleased).toBe(false);
  sends.settle();
  await expect.poll(() => linesReleased).toBe(true);
});
