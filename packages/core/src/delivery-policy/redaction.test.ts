import { describe, expect, it } from "vitest";
import { ConfigSchema } from "../config.ts";
import { type DeliveryPolicy, resolvePolicy } from "./policy.ts";
import { isSensitiveHeaderName, REDACTED, redactHeaders, redactPolicy } from "./redaction.ts";

describe("isSensitiveHeaderName", () => {
  it.each([
    "Authorization",
    "authorization",
    "Proxy-Authorization",
    "COOKIE",
    "X-Api-Key",
    "x-auth-token",
    "X-Client-Secret",
    "X-Password",
    "Keyring",
    "X-TOKEN",
    "X-Webhook-SECRET",
  ])("%s is sensitive", (name) => {
    expect(isSensitiveHeaderName(name)).toBe(true);
  });

  it.each(["Content-Type", "Accept", "X-Trace-Id", "X-Request-Id", "Keep-Going"])("%s is not", (name) => {
    expect(isSensitiveHeaderName(name)).toBe(false);
  });
});

describe("redactHeaders", () => {
  it("replaces sensitive values only, keeping names as written and the input unchanged", () => {
    const headers = { Authorization: "Bearer abc", "X-Api-Key": "k", "X-Trace": "1" };
    expect(redactHeaders(headers)).toEqual({ Authorization: REDACTED, "X-Api-Key": "[redacted]", "X-Trace": "1" });
    expect(headers.Authorization).toBe("Bearer abc");
  });
});

describe("redactPolicy", () => {
  it("redacts a stored policy's headers and keeps its other fields", () => {
    const stored = { method: "PUT" as const, headers: { Cookie: "session=1" }, timeoutMs: 2000 };
    expect(redactPolicy(stored)).toEqual({ method: "PUT", headers: { Cookie: REDACTED }, timeoutMs: 2000 });
    expect(stored.headers.Cookie).toBe("session=1");
  });

  it("redacts a resolved policy", () => {
    const resolved = resolvePolicy({ headers: { "X-Secret": "s" } }, ConfigSchema.parse({}));
    expect(redactPolicy(resolved).headers).toEqual({ "X-Secret": REDACTED });
  });

  it("leaves null and a policy without headers as they are", () => {
    expect(redactPolicy(null)).toBeNull();
    const policy: DeliveryPolicy = { timeoutMs: 1000 };
    expect(redactPolicy(policy)).toBe(policy);
  });
});
