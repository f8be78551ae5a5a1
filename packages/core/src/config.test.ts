import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.ts";

describe("loadConfig", () => {
  it("applies the reference's defaults when nothing is set", () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      QUEUE_PREFIX: "punctual",
      ALLOW_PRIVATE_DESTINATIONS: false,
      LOG_LEVEL: "info",
      RATE_LIMIT_PER_MINUTE: 100,
      MAX_ORGS_PER_ACCOUNT: 5,
      MAX_EVENTS_PER_MONTH: 1000,
      MAX_PAYLOAD_BYTES: 1024,
      MAX_CRON_JOBS_PER_ORG: 3,
      MAX_LIST_RESULTS: 1000,
      SEARCH_WINDOW_DAYS: 7,
      HISTORY_DAYS: 30,
      WORKER_CONCURRENCY: 50,
      DELIVERY_TIMEOUT_MS: 10_000,
      RETRY_DELAYS_MS: [3000, 5000, 10000],
    });
    expect(config.ADMIN_TOKEN).toBeUndefined();
  });

  it("reads and coerces set values", () => {
    const config = loadConfig({
      PORT: "8080",
      ALLOW_PRIVATE_DESTINATIONS: "true",
      RETRY_DELAYS_MS: "100, 200",
      ADMIN_TOKEN: "q7Rz-Lm2v8KxTp4N",
      LOG_LEVEL: "debug",
    });
    expect(config.PORT).toBe(8080);
    expect(config.ALLOW_PRIVATE_DESTINATIONS).toBe(true);
    expect(config.RETRY_DELAYS_MS).toEqual([100, 200]);
    expect(config.ADMIN_TOKEN).toBe("q7Rz-Lm2v8KxTp4N");
    expect(config.LOG_LEVEL).toBe("debug");
  });

  it("treats an empty variable as unset", () => {
    expect(loadConfig({ PORT: "" }).PORT).toBe(3000);
  });

  it.each([
    ["PORT", "not-a-number"],
    ["PORT", "70000"],
    ["ALLOW_PRIVATE_DESTINATIONS", "maybe"],
    ["DATABASE_URL", "mysql://localhost/db"],
    ["REDIS_URL", "http://localhost:6379"],
    ["LOG_LEVEL", "loud"],
    ["MAX_EVENTS_PER_MONTH", "0"],
    ["WORKER_CONCURRENCY", "2.5"],
    ["RETRY_DELAYS_MS", "3000,soon"],
    ["ADMIN_TOKEN", "short"],
    ["QUEUE_PREFIX", "has space"],
    ["CLAIM_LEAD_MS", "60000"],
  ])("refuses %s=%s with a message naming the variable", (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`^Invalid configuration:\\n  ${variable}: `));
  });

  it("names every bad variable at once", () => {
    try {
      loadConfig({ PORT: "x", LOG_LEVEL: "loud" });
      expect.unreachable();
    } catch (error) {
      expect((error as Error).message).toContain("PORT:");
      expect((error as Error).message).toContain("LOG_LEVEL:");
    }
  });

  it.each([
    "change-me-please-0123456789",
    "please-CHANGEME-now-1",
    "change_me_before_deploying",
    "my-Password-is-long-enough",
    "super-secret-token-value",
    "admin-token-for-this-site",
    "example-token-abcdefghij",
    "placeholder-token-abcdefg",
    "token-xxxxxxxxxxxxxxxxxxxx",
    "zzzzzzzzzzzzzzzzzzzzzzzz",
    "token-12345678901234567890",
  ])("refuses the placeholder ADMIN_TOKEN %s without echoing it", (token) => {
    expect(() => loadConfig({ ADMIN_TOKEN: token })).toThrow(/^Invalid configuration:\n {2}ADMIN_TOKEN: must not be /);
    expect(() => loadConfig({ ADMIN_TOKEN: token })).not.toThrow(token);
  });

  it("accepts a random ADMIN_TOKEN and an ADMIN_TOKEN_FILE path", () => {
    const config = loadConfig({
      ADMIN_TOKEN: "adm_Vq3kP9zR-tL7wXb2Nf5YcJ8hD1sG4mQ",
      ADMIN_TOKEN_FILE: "/var/lib/punctual/admin-token",
    });
    expect(config.ADMIN_TOKEN).toBe("adm_Vq3kP9zR-tL7wXb2Nf5YcJ8hD1sG4mQ");
    expect(config.ADMIN_TOKEN_FILE).toBe("/var/lib/punctual/admin-token");
    expect(loadConfig({}).ADMIN_TOKEN_FILE).toBeUndefined();
  });

  it("never echoes a secret value in its message", () => {
    expect(() => loadConfig({ ADMIN_TOKEN: "short" })).toThrow(/ADMIN_TOKEN: must be at least 16 characters$/);
  });
});

describe("TRUST_PROXY", () => {
  it("trusts no proxy by default, when empty, false or 0", () => {
    expect(loadConfig({}).TRUST_PROXY).toBe(false);
    for (const value of ["", " ", "false", "0"]) expect(loadConfig({ TRUST_PROXY: value }).TRUST_PROXY).toBe(false);
  });

  it("reads a hop count or a list of addresses, CIDRs and Express's range names", () => {
    expect(loadConfig({ TRUST_PROXY: "2" }).TRUST_PROXY).toBe(2);
    expect(loadConfig({ TRUST_PROXY: "10.0.0.0/8, 127.0.0.1,fd00::/8,::1,loopback" }).TRUST_PROXY).toEqual([
      "10.0.0.0/8",
      "127.0.0.1",
      "fd00::/8",
      "::1",
      "loopback",
    ]);
  });

  it.each(["true", "yes", "10.0.0.0/33", "::1/129", "10.0.0.1/8/8", "10.0.0", "127.0.0.1,", "proxy.example", "-1"])(
    "refuses %s with a message saying what it takes",
    (value) => {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(
        /^Invalid configuration:\n {2}TRUST_PROXY: must be false, a number of proxy hops, or a comma-separated list of proxy addresses or CIDRs/,
      );
    },
  );
});

describe("ADMIN_AUTH_FAILURES_PER_MINUTE", () => {
  it("defaults to 10 and takes a positive whole number", () => {
    expect(loadConfig({}).ADMIN_AUTH_FAILURES_PER_MINUTE).toBe(10);
    expect(loadConfig({ ADMIN_AUTH_FAILURES_PER_MINUTE: "3" }).ADMIN_AUTH_FAILURES_PER_MINUTE).toBe(3);
    expect(() => loadConfig({ ADMIN_AUTH_FAILURES_PER_MINUTE: "0" })).toThrow(/ADMIN_AUTH_FAILURES_PER_MINUTE: /);
  });
});
