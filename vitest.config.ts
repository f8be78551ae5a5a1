import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "packages/*/src/**/*.test.ts",
      "services/*/src/**/*.test.ts",
      "services/*/test/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    // Migrates one template database per run; each test file copies it (test/support/context.ts).
    globalSetup: ["test/support/global-setup.ts"],
    pool: "forks",
    // The tests mostly wait on Postgres, Redis and the network: three files at a time on two cores.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Deliveries and queues are real: a slow shared machine must not turn into flaky failures.
    expect: { poll: { timeout: 15_000, interval: 25 } },
  },
});
