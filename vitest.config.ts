import { defineConfig } from "vitest/config";

/**
 * Tests that measure lateness in milliseconds: they run alone, after the rest, so the files running
 * beside them on a small machine are not what they measure.
 */
const TIMING_TESTS = [
  "services/worker/test/isolation.test.ts",
  // Bounds in milliseconds on how fast attempts leave the dispatcher.
  "services/worker/src/delivery/dispatcher.test.ts",
  // One organization's costliest requests against another's requests and deliveries, within 50 ms.
  "test/cron-expression-cost.test.ts",
  // Deliveries handed over from a killed worker, on time within 1 s.
  "test/chaos/worker-kill-prepared.test.ts",
  // Restarts mid-burst whose deliveries must stay on time within 1 s.
  "services/worker/test/shutdown.test.ts",
  // Retry schedules of delivery policies, each gap within 150 ms.
  "services/worker/test/delivery-policy.test.ts",
  // Flows' rate limits on starts within 50 ms, and deliveries beside held flows on time within 250 ms.
  "services/worker/test/flows.test.ts",
  // An Unhealthy origin's probes one per 500 ms within 100 ms, and its waiting deliveries let go together.
  "services/worker/test/destination-health.test.ts",
  // A killed worker's flow leases back at their expiry, within 250 ms before and 1 s after it.
  "test/chaos/flow-lease-kill.test.ts",
  // Cron runs on their seconds and jittered times within 500 ms, and workers stopped over timed firings.
  "services/worker/test/cron-schedules.test.ts",
];

export default defineConfig({
  test: {
    // Migrates one template database per run; each test file copies it (test/support/context.ts).
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Deliveries and queues are real: a slow shared machine must not turn into flaky failures.
    expect: { poll: { timeout: 15_000, interval: 25 } },
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: [
            "packages/*/src/**/*.test.ts",
            "services/*/src/**/*.test.ts",
            "services/*/test/**/*.test.ts",
            "test/**/*.test.ts",
          ],
          exclude: TIMING_TESTS,
          // The tests mostly wait on Postgres, Redis and the network: three files at a time on two cores.
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "timing",
          include: TIMING_TESTS,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
