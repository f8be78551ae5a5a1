import { describe, expect, it } from "vitest";
import { ConfigSchema } from "../config.ts";
import {
  type DeliveryPolicy,
  headerValue,
  isExponentialRetry,
  maxAttempts,
  mergeWithDefault,
  resolvePolicy,
} from "./policy.ts";

const defaults = ConfigSchema.parse({});

describe("resolvePolicy", () => {
  it("gives today's behaviour for no policy: POST, envelope, no headers, the deployment's timeout and retries", () => {
    const today = {
      method: "POST",
      headers: {},
      body: "envelope",
      timeoutMs: 10_000,
      retry: { delaysMs: [3000, 5000, 10000], maxAgeMs: null, stopOnStatus: [] },
    };
    expect(resolvePolicy(null, defaults)).toEqual(today);
    expect(resolvePolicy(undefined, defaults)).toEqual(today);
    expect(resolvePolicy({}, defaults)).toEqual(today);
    expect(maxAttempts(resolvePolicy(null, defaults).retry)).toBe(defaults.RETRY_DELAYS_MS.length + 1);
  });

  it("follows the deployment's settings, including an empty or unusual retry schedule", () => {
    const config = { DELIVERY_TIMEOUT_MS: 2500, RETRY_DELAYS_MS: [0, 50] };
    expect(resolvePolicy(null, config)).toMatchObject({ timeoutMs: 2500, retry: { delaysMs: [0, 50] } });
    expect(resolvePolicy(null, { ...config, RETRY_DELAYS_MS: [] }).retry).toEqual({
      delaysMs: [],
      maxAgeMs: null,
      stopOnStatus: [],
    });
  });

  it("does not share arrays or objects with the config or the stored policy", () => {
    const config = { DELIVERY_TIMEOUT_MS: 1000, RETRY_DELAYS_MS: [1, 2] };
    const resolved = resolvePolicy(null, config);
    if (isExponentialRetry(resolved.retry)) throw new Error("fixed expected");
    resolved.retry.delaysMs.push(3);
    expect(config.RETRY_DELAYS_MS).toEqual([1, 2]);
    const stored: DeliveryPolicy = { headers: { "X-A": "1" } };
    resolvePolicy(stored, config).headers["X-B"] = "2";
    expect(stored.headers).toEqual({ "X-A": "1" });
  });

  it("takes every stored field over the defaults", () => {
    const stored: DeliveryPolicy = {
      method: "PATCH",
      headers: { "X-A": "1" },
      body: "raw",
      timeoutMs: 30_000,
      retry: { delaysMs: [100], maxAgeMs: 5000, stopOnStatus: [410] },
    };
    expect(resolvePolicy(stored, defaults)).toEqual({
      method: "PATCH",
      headers: { "X-A": "1" },
      body: "raw",
      timeoutMs: 30_000,
      retry: { delaysMs: [100], maxAgeMs: 5000, stopOnStatus: [410] },
    });
  });

  it("fills the exponential form's optional parts", () => {
    const resolved = resolvePolicy(
      { retry: { attempts: 3, backoff: "exponential", initialDelayMs: 100, maxDelayMs: 1000 } },
      defaults,
    );
    expect(resolved.retry).toEqual({
      attempts: 3,
      backoff: "exponential",
      initialDelayMs: 100,
      maxDelayMs: 1000,
      jitter: false,
      maxAgeMs: null,
      stopOnStatus: [],
    });
    expect(isExponentialRetry(resolved.retry)).toBe(true);
    expect(maxAttempts(resolved.retry)).toBe(4);
  });
});

describe("mergeWithDefault", () => {
  const orgDefault: DeliveryPolicy = {
    method: "PUT",
    headers: { Authorization: "Bearer org", "X-Org": "1" },
    timeoutMs: 20_000,
    retry: { attempts: 5, backoff: "exponential", initialDelayMs: 1000, maxDelayMs: 60_000, maxAgeMs: 3_600_000 },
  };

  it("takes each field the record left out from the default", () => {
    expect(mergeWithDefault({ body: "raw" }, orgDefault)).toEqual({ ...orgDefault, body: "raw" });
    expect(mergeWithDefault({}, orgDefault)).toEqual(orgDefault);
    expect(mergeWithDefault(null, orgDefault)).toEqual(orgDefault);
  });

  it("lets the record's own fields win, headers and retry each as a whole", () => {
    const own: DeliveryPolicy = { method: "POST", headers: { "X-Own": "2" }, retry: { delaysMs: [500] } };
    expect(mergeWithDefault(own, orgDefault)).toEqual({
      method: "POST",
      headers: { "X-Own": "2" },
      timeoutMs: 20_000,
      // Not merged with the default's exponential fields nor its maxAgeMs.
      retry: { delaysMs: [500] },
    });
  });

  it("gives the record's own policy without a default, and {} without either", () => {
    expect(mergeWithDefault({ timeoutMs: 5000 }, null)).toEqual({ timeoutMs: 5000 });
    expect(mergeWithDefault(undefined, undefined)).toEqual({});
    expect(mergeWithDefault({ method: undefined }, {})).toEqual({});
  });
});

describe("headerValue", () => {
  it("finds a header in any case", () => {
    expect(headerValue({ "content-TYPE": "text/csv" }, "Content-Type")).toBe("text/csv");
    expect(headerValue({ "X-A": "1" }, "Content-Type")).toBeUndefined();
    expect(headerValue(undefined, "Content-Type")).toBeUndefined();
  });
});
