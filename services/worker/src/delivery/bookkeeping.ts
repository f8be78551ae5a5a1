// When a worker does its bookkeeping: the work that follows deliveries and must not slow them down.
// That is the final outcomes' log lines (attempt-recorder.ts), the completions of finished event
// jobs in BullMQ (job-endings.ts) and the maintenance runs (maintenance-worker.ts). Run inside a
// burst, each is CPU time the burst's last requests wait for: serializing ten thousand log lines,
// completing ten thousand jobs, a reconciler pass of tens of milliseconds.
//
// The rule, written once: bookkeeping runs once the sends are quiet — no attempt waits for a send
// slot and none counted is in flight (dispatcher.ts), or, after QUIET_AFTER_MS of waiting, at a
// moment when no attempt waits for a slot (the last answers may still be coming: the burst is
// sent) — and, for maintenance, once no claim, send or retry of this worker is due within
// QUIET_AHEAD_MS. Under sustained load there is no such moment, so nothing waits longer than
// BOOKKEEPING_MAX_WAIT_MS after it was asked for: late, never starved.
//
// Lock renewals are not bookkeeping: they keep this worker's jobs its own, and follow the lock's
// time (job-locks.ts reads `busy` to put them off within the lock's margin).

/**
 * The longest any bookkeeping waits for the sends to be quiet: longer than a burst lasts (50,000 due
 * at once are answered within 17 s, bench/RESULTS.md, and about 20 s on a loaded machine), so that only
 * sustained load makes bookkeeping run beside the sends. With 2 s, completions and maintenance ran
 * inside such a burst and made it about a third slower (docs/decisions.md).
 */
export const BOOKKEEPING_MAX_WAIT_MS = 30_000;
/** How soon a claim, send or retry must be due for a maintenance run to wait for it to pass. */
export const QUIET_AHEAD_MS = 2_000;
/**
 * After this long, a moment when no attempt waits for a slot is quiet enough, though some are still
 * in flight: a burst larger than WORKER_PREPARED_JOBS is taken block by block as room frees, and its
 * jobs' locks are renewed until they are completed, so completions must not wait for its very end.
 */
export const QUIET_AFTER_MS = 1_000;
/** How often the waits check for such a moment. */
const QUIET_CHECK_MS = 50;

/** What bookkeeping watches: the dispatcher's sends and the event processor's next instant. */
export interface DeliveryActivity {
  /** Attempts waiting for a send slot. */
  readonly waiting: number;
  /** Resolves once no attempt waits for a slot and none counted is in flight (unbounded). */
  whenIdle(): Promise<void>;
  /** The earliest time a held event is claimed, sent or retried (epoch ms); undefined when none. */
  nextInstant(): number | undefined;
}

export interface Bookkeeping {
  /** Whether attempts wait for a send slot (a burst is being sent): bookkeeping now would slow it. */
  readonly busy: boolean;
  /** Resolves once the sends are quiet, or BOOKKEEPING_MAX_WAIT_MS from now. */
  afterSends(): Promise<void>;
  /**
   * Starts a maintenance run: the returned pause resolves at the next lull (sends quiet, nothing due
   * within QUIET_AHEAD_MS), and every pause of the run by BOOKKEEPING_MAX_WAIT_MS after its start.
   */
  maintenanceRun(): () => Promise<void>;
  /**
   * The worker is stopping: maintenance waits end at once, now and later (the maintenance worker's
   * stop waits for its run). Outcome lines and completions keep their rule while the drain's sends go.
   */
  close(): void;
}

export interface BookkeepingOptions {
  /** Overrides BOOKKEEPING_MAX_WAIT_MS (tests). */
  maxWaitMs?: number;
  /** Overrides QUIET_AHEAD_MS (tests). */
  aheadMs?: number;
}

/** Bookkeeping without deliveries beside it (tests, tools): it never waits. */
export const noBookkeeping: Bookkeeping = {
  busy: false,
  afterSends: () => Promise.resolve(),
  maintenanceRun: () => () => Promise.resolve(),
  close: () => {},
};

export function createBookkeeping(activity: DeliveryActivity, options: BookkeepingOptions = {}): Bookkeeping {
  const maxWaitMs = options.maxWaitMs ?? BOOKKEEPING_MAX_WAIT_MS;
  const aheadMs = options.aheadMs ?? QUIET_AHEAD_MS;
  let closed = false;
  /** Pending waits, each ended by the sends going idle or its deadline. */
  const wakers = new Set<(quiet: boolean) => void>();
  /** The maintenance runs' waits among them, ended at close too. */
  const closable = new Set<(quiet: boolean) => void>();
  /** When each pending wait began: after QUIET_AFTER_MS, a moment with nothing waiting ends it. */
  const since = new Map<(quiet: boolean) => void, number>();
  let watchingIdle = false;
  let checker: NodeJS.Timeout | undefined;

  /** Ends the waits begun QUIET_AFTER_MS ago or more when no attempt waits for a slot. */
  function checkQuiet() {
    if (since.size === 0) {
      clearInterval(checker);
      checker = undefined;
      return;
    }
    if (activity.waiting > 0) return;
    const now = Date.now();
    for (const [wake, began] of [...since]) if (now - began >= QUIET_AFTER_MS) wake(true);
  }

  /** One watch of the sends at a time, however many waits share it. */
  function watchIdle() {
    if (watchingIdle) return;
    watchingIdle = true;
    void activity.whenIdle().then(() => {
      watchingIdle = false;
      for (const wake of [...wakers]) wake(true);
    });
  }

  /**
   * Resolves true once the sends are quiet (idle, or nothing waiting after QUIET_AFTER_MS), false at
   * `deadline` or, for maintenance, at close, whichever comes first.
   */
  function wait(deadline: number, endsAtClose: boolean): Promise<boolean> {
    if (closed && endsAtClose) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      const wake = (quiet: boolean) => {
        clearTimeout(timer);
        wakers.delete(wake);
        closable.delete(wake);
        since.delete(wake);
        resolve(quiet);
      };
      const timer = setTimeout(() => wake(false), Math.max(1, deadline - Date.now()));
      wakers.add(wake);
      if (endsAtClose) closable.add(wake);
      since.set(wake, Date.now());
      if (checker === undefined) {
        checker = setInterval(checkQuiet, QUIET_CHECK_MS);
        checker.unref();
      }
      watchIdle();
    });
  }

  async function lull(deadline: number): Promise<void> {
    for (;;) {
      const now = Date.now();
      if (closed || now >= deadline) return;
      const next = activity.nextInstant();
      if (next !== undefined && next - now < aheadMs) {
        // Past the instant its sends keep the dispatcher busy; the wait for the sends follows.
        await sleep(Math.min(next + 1, deadline));
        continue;
      }
      if (!(await wait(deadline, true))) return;
      // An instant may have come within QUIET_AHEAD_MS while the sends went quiet.
      const after = activity.nextInstant();
      if (after === undefined || after - Date.now() >= aheadMs) return;
    }
  }

  /** Resolves at `until` (epoch ms) or at close. */
  function sleep(until: number): Promise<void> {
    if (closed) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(1, until - Date.now()));
      sleepers.add(done);
    });
  }
  const sleepers = new Set<() => void>();

  return {
    get busy() {
      return activity.waiting > 0;
    },
    async afterSends() {
      await wait(Date.now() + maxWaitMs, false);
    },
    maintenanceRun() {
      const deadline = Date.now() + maxWaitMs;
      return () => lull(deadline);
    },
    close() {
      closed = true;
      for (const wake of [...closable]) wake(false);
      for (const wake of [...sleepers]) wake();
    },
  };
}
