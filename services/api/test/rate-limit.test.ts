import { connect, createServer, type Server, type Socket } from "node:net";
import { type Config, createRedis } from "@punctual/core";
import type { Db, Prisma } from "@punctual/db";
import { Redis } from "ioredis";
import { pino } from "pino";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clientAddresses, createProxiedTestContext } from "../../../test/support/client-addresses.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
} from "../../../test/support/context.ts";
import { createApp } from "../src/app.ts";
import { clientAddressSubject } from "../src/rate-limit/client-address.ts";
import { TOO_MANY_REQUESTS } from "../src/rate-limit/rate-limit.ts";

// Contract §7 with the limit lowered to 5 per minute. The app trusts loopback proxies
// (TRUST_PROXY=loopback), so each test speaks from its own client address through
// `X-Forwarded-For` and never shares a budget with another test; counters live under this file's
// own Redis prefix.

const LIMIT = 5;
const ADMIN_TOKEN = "rl-Vq3kP9zR-tL7wXb2Nf5YcJ8";

let context: TestContext;
let app: ReturnType<typeof createApp>;
const newAddress = clientAddresses("203.0.113");

beforeAll(async () => {
  context = await createProxiedTestContext({ RATE_LIMIT_PER_MINUTE: String(LIMIT), ADMIN_TOKEN });
  app = createApp(createTestApiDeps(context).deps);
});
afterAll(() => context.close());

const listEvents = (target: typeof app, from: string, apiKey?: string) => {
  const call = request(target).get("/api/events").set("x-forwarded-for", from);
  return apiKey === undefined ? call : call.set("x-api-key", apiKey);
};

describe("per API key", () => {
  it("answers RATE_LIMIT_PER_MINUTE requests, then 429 with Retry-After and RateLimit headers", async () => {
    const org = await createTestOrganization(context);
    const from = newAddress();
    for (let n = 1; n <= LIMIT; n++) {
      const response = await listEvents(app, from, org.apiKey);
      expect(response.status).toBe(200);
      expect(response.headers["ratelimit-limit"]).toBe(String(LIMIT));
      expect(response.headers["ratelimit-remaining"]).toBe(String(LIMIT - n));
      expect(response.headers["ratelimit-policy"]).toBe(`${LIMIT};w=60`);
      const reset = Number(response.headers["ratelimit-reset"]);
      expect(reset).toBeGreaterThan(0);
      expect(reset).toBeLessThanOrEqual(60);
      expect(response.headers["retry-after"]).toBeUndefined();
    }

    const refused = await listEvents(app, from, org.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
    expect(refused.headers["content-type"]).toMatch(/^application\/json/);
    // Blocked for RATE_LIMIT_BLOCK_SECONDS (60) from the request that went over.
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(58);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers["ratelimit-remaining"]).toBe("0");
    expect(refused.headers["ratelimit-reset"]).toBe(String(retryAfter));

    // Still refused, whatever the route, while the block lasts.
    const again = await request(app).get("/api/nowhere").set("x-api-key", org.apiKey).set("x-forwarded-for", from);
    expect(again.status).toBe(429);
    expect(again.body).toEqual({ message: TOO_MANY_REQUESTS });
  });

  it("gives every key its own budget, wherever its requests come from", async () => {
    const [first, second] = await Promise.all([createTestOrganization(context), createTestOrganization(context)]);
    const from = newAddress();
    for (let n = 0; n < LIMIT; n++) expect((await listEvents(app, newAddress(), first.apiKey)).status).toBe(200);
    // The key's budget is spent even though every request came from another address.
    expect((await listEvents(app, newAddress(), first.apiKey)).status).toBe(429);
    // Neither another key nor the address of the refused requests is touched.
    const other = await listEvents(app, from, second.apiKey);
    expect(other.status).toBe(200);
    expect(other.headers["ratelimit-remaining"]).toBe(String(LIMIT - 1));
  });

  it("serves a known valid key from an address that is blocked for keyless requests", async () => {
    const org = await createTestOrganization(context);
    // The key authenticates once (from anywhere): from then on it is known for a day.
    expect((await listEvents(app, newAddress(), org.apiKey)).status).toBe(200);
    const from = newAddress();
    for (let n = 0; n <= LIMIT; n++) await listEvents(app, from);
    expect((await listEvents(app, from)).status).toBe(429);
    expect((await listEvents(app, from, org.apiKey)).status).toBe(200);
    // A key that has not authenticated lately is refused there like a made-up one, until the block ends.
    const unused = await createTestOrganization(context);
    expect((await listEvents(app, from, unused.apiKey)).status).toBe(429);
  });

  it("lets a blocked client in again once the block has passed", async () => {
    const quick = await createTestContext({
      RATE_LIMIT_PER_MINUTE: "2",
      RATE_LIMIT_BLOCK_SECONDS: "1",
      TRUST_PROXY: "loopback",
    });
    try {
      const quickApp = createApp(createTestApiDeps(quick).deps);
      const org = await createTestOrganization(quick);
      const from = newAddress();
      expect((await listEvents(quickApp, from, org.apiKey)).status).toBe(200);
      expect((await listEvents(quickApp, from, org.apiKey)).status).toBe(200);
      const refused = await listEvents(quickApp, from, org.apiKey);
      expect(refused.status).toBe(429);
      expect(refused.headers["retry-after"]).toBe("1");
      await expect
        .poll(async () => (await listEvents(quickApp, from, org.apiKey)).status, { timeout: 5_000 })
        .toBe(200);
    } finally {
      await quick.close();
    }
  });
});

describe("per client address, for requests without a valid key", () => {
  it("counts requests without a key, then answers 429 instead of 401", async () => {
    const from = newAddress();
    for (let n = 1; n <= LIMIT; n++) {
      const response = await listEvents(app, from);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ message: "Missing API key" });
      expect(response.headers["ratelimit-remaining"]).toBe(String(LIMIT - n));
    }
    const refused = await listEvents(app, from);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("counts invalid keys against the address, so new made-up keys buy no new budget", async () => {
    const from = newAddress();
    for (let n = 0; n < LIMIT; n++) {
      const response = await listEvents(app, from, `pk_made-up-${n}`);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ message: "Invalid API key" });
    }
    const refused = await listEvents(app, from, "pk_yet-another-made-up-key");
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
    // Another address is not affected.
    expect((await listEvents(app, newAddress(), "pk_made-up")).status).toBe(401);
  });

  it("counts the admin API and the OpenAPI document against the address", async () => {
    const from = newAddress();
    const admin = await request(app)
      .get("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`)
      .set("x-forwarded-for", from);
    expect(admin.status).toBe(200);
    expect(admin.headers["ratelimit-remaining"]).toBe(String(LIMIT - 1));
    const document = await request(app).get("/api/openapi.json").set("x-forwarded-for", from);
    expect(document.status).toBe(200);
    expect(document.headers["ratelimit-remaining"]).toBe(String(LIMIT - 2));
    // A wrong admin token is counted once, not twice.
    const wrong = await request(app)
      .get("/api/admin/organizations")
      .set("authorization", "Bearer wrong")
      .set("x-forwarded-for", from);
    expect(wrong.status).toBe(401);
    expect(wrong.headers["ratelimit-remaining"]).toBe(String(LIMIT - 3));
  });

  it("does not limit health checks", async () => {
    const from = newAddress();
    for (let n = 0; n <= LIMIT; n++) await listEvents(app, from);
    expect((await listEvents(app, from)).status).toBe(429);
    for (const path of ["/healthz", "/readyz"]) {
      const response = await request(app).get(path).set("x-forwarded-for", from);
      expect(response.status).toBe(200);
      expect(response.headers["ratelimit-limit"]).toBeUndefined();
    }
  });

  it("counts an IPv6 client by its /64 and an IPv4-mapped address as IPv4", () => {
    expect(clientAddressSubject("2001:db8:1:2:aaaa::1")).toBe(clientAddressSubject("2001:db8:1:2:bbbb::2"));
    expect(clientAddressSubject("2001:db8:1:2::1")).not.toBe(clientAddressSubject("2001:db8:1:3::1"));
    expect(clientAddressSubject("::ffff:192.0.2.7")).toBe(clientAddressSubject("192.0.2.7"));
    expect(clientAddressSubject("192.0.2.7")).not.toBe(clientAddressSubject("192.0.2.8"));
  });
});

/** The real database behind a thin wrapper that counts the API key lookups the app makes. */
function countingKeyLookups(db: Db) {
  let lookups = 0;
  const wrapped = new Proxy(db, {
    get(target, property) {
      // `queryRows` sends any Db other than the pool's own client through `$queryRaw`.
      if (property === "$queryRaw") {
        // Called as a tagged template, or with one Prisma.Sql.
        return (query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
          const text = Array.isArray(query) ? query.join("") : (query as Prisma.Sql).sql;
          if (text.includes("FROM api_keys")) lookups++;
          return target.$queryRaw(query as TemplateStringsArray, ...values);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { db: wrapped, lookups: () => lookups };
}

describe("a blocked client costs no database work", () => {
  let counted: ReturnType<typeof countingKeyLookups>;
  let watched: ReturnType<typeof createApp>;
  beforeAll(() => {
    counted = countingKeyLookups(context.db);
    watched = createApp({ ...createTestApiDeps(context).deps, db: counted.db });
  });

  it("refuses made-up keys from a blocked address before looking them up", async () => {
    const from = newAddress();
    for (let n = 0; n < LIMIT; n++) expect((await listEvents(watched, from, `pk_made-up-${n}`)).status).toBe(401);
    expect((await listEvents(watched, from, "pk_made-up-last")).status).toBe(429);
    const before = counted.lookups();
    expect(before).toBeGreaterThanOrEqual(LIMIT);
    for (let n = 0; n < 3; n++) {
      const refused = await listEvents(watched, from, `pk_made-up-blocked-${n}`);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
      expect(Number(refused.headers["retry-after"])).toBeGreaterThan(0);
    }
    expect(counted.lookups()).toBe(before);
  });

  it("refuses a blocked key before looking it up, so even its revocation goes unseen", async () => {
    const org = await createTestOrganization(context);
    for (let n = 0; n < LIMIT; n++) expect((await listEvents(watched, newAddress(), org.apiKey)).status).toBe(200);
    expect((await listEvents(watched, newAddress(), org.apiKey)).status).toBe(429);
    await context.db.apiKey.updateMany({ where: { orgId: org.orgId }, data: { revokedAt: new Date() } });
    const before = counted.lookups();
    // A lookup would find the key revoked (401) and count a fresh address: 429 shows there was none.
    const refused = await listEvents(watched, newAddress(), org.apiKey);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ message: TOO_MANY_REQUESTS });
    expect(Number(refused.headers["retry-after"])).toBeGreaterThanOrEqual(58);
    expect(counted.lookups()).toBe(before);
  });

  it("looks a revoked key up once from a blocked address, then refuses it without", async () => {
    const org = await createTestOrganization(context);
    expect((await listEvents(watched, newAddress(), org.apiKey)).status).toBe(200);
    await context.db.apiKey.updateMany({ where: { orgId: org.orgId }, data: { revokedAt: new Date() } });
    const from = newAddress();
    for (let n = 0; n <= LIMIT; n++) await listEvents(watched, from);
    const before = counted.lookups();
    // Known from its last use, the key is looked up once, found revoked and forgotten.
    expect((await listEvents(watched, from, org.apiKey)).status).toBe(429);
    expect(counted.lookups()).toBe(before + 1);
    expect((await listEvents(watched, from, org.apiKey)).status).toBe(429);
    expect(counted.lookups()).toBe(before + 1);
  });
});

describe("client address and proxies (TRUST_PROXY)", () => {
  /** An app of its own, with its own counters, trusting the given proxies. */
  const appTrusting = (label: string, trustProxy: Config["TRUST_PROXY"]) => {
    const { deps } = createTestApiDeps(context);
    const config = { ...deps.config, TRUST_PROXY: trustProxy, QUEUE_PREFIX: `${deps.config.QUEUE_PREFIX}:${label}` };
    return createApp({ ...deps, config });
  };

  it("ignores X-Forwarded-For by default: rotating it does not escape the limit", async () => {
    const direct = appTrusting("direct", false);
    const statuses: number[] = [];
    for (let n = 0; n < LIMIT + 5; n++)
      statuses.push((await listEvents(direct, newAddress(), `pk_made-up-${n}`)).status);
    expect(statuses).toEqual([...Array(LIMIT).fill(401), ...Array(5).fill(429)]);
  });

  it("does not let a spoofed X-Forwarded-For block the address it names by default", async () => {
    const direct = appTrusting("spoofed", false);
    const victim = newAddress();
    for (let n = 0; n <= LIMIT; n++) await listEvents(direct, victim);
    // Every request counted against the real peer (this test), none against the named address.
    expect((await listEvents(direct, victim)).status).toBe(429);
    const counters = await context.redis.keys(`${context.config.QUEUE_PREFIX}:spoofed:rate-limit:*`);
    expect(counters).toEqual([`${context.config.QUEUE_PREFIX}:spoofed:rate-limit:ip:127.0.0.1`]);
  });

  it("takes the client from X-Forwarded-For behind TRUST_PROXY hops, ignoring what the client prepended", async () => {
    const proxied = appTrusting("one-hop", 1);
    const client = newAddress();
    const statuses: number[] = [];
    for (let n = 0; n <= LIMIT; n++) {
      // The proxy appends the address it saw; anything before it is the client's own invention.
      const response = await listEvents(proxied, `198.51.100.${n + 1}, ${client}`);
      statuses.push(response.status);
    }
    expect(statuses).toEqual([...Array(LIMIT).fill(401), 429]);
    // Another client behind the same proxy has its own budget.
    expect((await listEvents(proxied, newAddress())).status).toBe(401);
  });

  it("uses X-Forwarded-For from a listed proxy address", async () => {
    const listed = appTrusting("listed", ["127.0.0.1", "::1"]);
    const first = newAddress();
    for (let n = 0; n <= LIMIT; n++) await listEvents(listed, first);
    expect((await listEvents(listed, first)).status).toBe(429);
    expect((await listEvents(listed, newAddress())).status).toBe(401);
  });
});

describe("across API instances", () => {
  // A second instance: its own app and its own Redis connection, the same Redis server and prefix.
  let secondRedis: Redis;
  let second: ReturnType<typeof createApp>;
  beforeAll(async () => {
    secondRedis = createRedis(context.config.REDIS_URL);
    await secondRedis.ping();
    second = createApp({ ...createTestApiDeps(context).deps, redis: secondRedis });
  });
  afterAll(() => secondRedis.quit());

  it("shares one budget between two instances on the same Redis", async () => {
    const org = await createTestOrganization(context);
    const from = newAddress();
    const statuses: number[] = [];
    for (let n = 0; n <= LIMIT; n++) {
      statuses.push((await listEvents(n % 2 === 0 ? app : second, from, org.apiKey)).status);
    }
    expect(statuses).toEqual([...Array(LIMIT).fill(200), 429]);
    expect((await listEvents(app, from, org.apiKey)).status).toBe(429);
    expect((await listEvents(second, from, org.apiKey)).status).toBe(429);
  });

  it("holds under concurrent requests: exactly the limit gets through", async () => {
    const org = await createTestOrganization(context);
    const responses = await Promise.all(
      Array.from({ length: LIMIT * 3 }, (_, n) => listEvents(n % 2 === 0 ? app : second, newAddress(), org.apiKey)),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(LIMIT * 2);
  });
});

describe("when Redis fails", () => {
  it("lets requests through (fail open) while Redis is unreachable", async () => {
    const org = await createTestOrganization(context);
    const deadRedis = new Redis("redis://127.0.0.1:1", {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    deadRedis.on("error", () => {});
    try {
      const lines: string[] = [];
      const logger = pino({ level: "warn" }, { write: (line: string) => lines.push(line) });
      const open = createApp({ ...createTestApiDeps(context).deps, redis: deadRedis, logger });
      const from = newAddress();
      for (let n = 0; n < LIMIT * 2; n++) {
        const response = await listEvents(open, from, org.apiKey);
        expect(response.status).toBe(200);
        expect(response.headers["ratelimit-limit"]).toBeUndefined();
      }
      expect((await listEvents(open, from)).status).toBe(401);
      // The outage is logged, once per interval rather than once per request.
      const warnings = lines.filter((line) => line.includes("rate limiter unavailable"));
      expect(warnings).toHaveLength(1);
    } finally {
      deadRedis.disconnect();
    }
  });

  it("lets requests through within a moment when Redis stops answering", async () => {
    const org = await createTestOrganization(context);
    // A TCP proxy in front of the real Redis that can go silent: the connection stays up and
    // "ready", commands just never get an answer (a hung Redis, not a refused connection).
    const redisUrl = new URL(context.config.REDIS_URL);
    let silent = false;
    const sockets: Socket[] = [];
    const proxy: Server = createServer((client) => {
      const upstream = connect(Number(redisUrl.port || 6379), redisUrl.hostname);
      sockets.push(client, upstream);
      client.on("data", (chunk) => {
        if (!silent) upstream.write(chunk);
      });
      upstream.on("data", (chunk) => client.write(chunk));
      client.on("error", () => upstream.destroy());
      upstream.on("error", () => client.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const address = proxy.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const hungRedis = new Redis({ host: "127.0.0.1", port, maxRetriesPerRequest: null });
    hungRedis.on("error", () => {});
    try {
      await expect.poll(() => hungRedis.status).toBe("ready");
      const slow = createApp({ ...createTestApiDeps(context).deps, redis: hungRedis });
      const from = newAddress();
      const counted = await listEvents(slow, from, org.apiKey);
      expect(counted.status).toBe(200);
      expect(counted.headers["ratelimit-remaining"]).toBe(String(LIMIT - 1));

      silent = true;
      const started = Date.now();
      const response = await listEvents(slow, from, org.apiKey);
      expect(response.status).toBe(200);
      expect(response.headers["ratelimit-limit"]).toBeUndefined();
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      hungRedis.disconnect();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});
