import { createTestContext, type TestContext } from "./context.ts";

// The API's limits count per client address. A test context for them has the API trust loopback
// proxies (TRUST_PROXY=loopback), so each test speaks from an address of its own through
// X-Forwarded-For and never shares a budget with another test.

/** `${network}.1`, `${network}.2`, …: at each call, a client address no other test of the file has used. */
export function clientAddresses(network: string): () => string {
  let next = 1;
  return () => `${network}.${next++}`;
}

/**
 * A test context whose API trusts loopback proxies, its Redis connection ready: the limiters fail
 * open until it is, and a test's first request must be counted.
 */
export async function createProxiedTestContext(overrides: Record<string, string> = {}): Promise<TestContext> {
  const context = await createTestContext({ TRUST_PROXY: "loopback", ...overrides });
  await context.redis.ping();
  return context;
}
