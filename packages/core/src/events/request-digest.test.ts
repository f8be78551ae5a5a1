import { describe, expect, it } from "vitest";
import { requestDigest } from "./event-creator.ts";

describe("requestDigest", () => {
  const request = {
    payload: '{"order":42}',
    destination: "https://example.com/hook",
    scheduledTime: new Date("2030-01-20T10:00:00.000Z"),
  };

  it("is the same for the same instant, however it was written", () => {
    const sameInstant = { ...request, scheduledTime: new Date("2030-01-20T11:00:00+01:00") };
    expect(requestDigest(sameInstant)).toBe(requestDigest(request));
    expect(requestDigest(request)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("differs when the payload, the destination or the time differs", () => {
    const digests = [
      request,
      { ...request, payload: '{"order":43}' },
      { ...request, destination: "https://example.com/other" },
      { ...request, scheduledTime: new Date("2030-01-20T10:00:00.001Z") },
      // Fields cannot run into one another: moving text from one to the next is another request.
      { ...request, payload: '{"order":42}https', destination: "://example.com/hook" },
    ].map(requestDigest);
    expect(new Set(digests).size).toBe(digests.length);
  });

  it("keeps the digest of a request without policy fields, and tells policies apart whatever their key order", () => {
    expect(requestDigest({ ...request, deliveryPolicy: {} })).toBe(requestDigest(request));
    expect(requestDigest({ ...request, deliveryPolicy: undefined })).toBe(requestDigest(request));
    const policy = { timeoutMs: 5000, headers: { "X-A": "1", "X-B": "2" } };
    const reordered = { headers: { "X-B": "2", "X-A": "1" }, timeoutMs: 5000 };
    expect(requestDigest({ ...request, deliveryPolicy: policy })).toBe(
      requestDigest({ ...request, deliveryPolicy: reordered }),
    );
    const digests = [
      request,
      { ...request, deliveryPolicy: policy },
      { ...request, deliveryPolicy: { ...policy, timeoutMs: 6000 } },
      { ...request, deliveryPolicy: { ...policy, method: "PUT" as const } },
    ].map(requestDigest);
    expect(new Set(digests).size).toBe(digests.length);
  });

  it("keeps the digest of a request without a flow key, and tells flow keys apart from policies", () => {
    expect(requestDigest({ ...request, flowKey: undefined })).toBe(requestDigest(request));
    const digests = [
      request,
      { ...request, flowKey: "invoices" },
      { ...request, flowKey: "reports" },
      { ...request, flowKey: "invoices", deliveryPolicy: { timeoutMs: 5000 } },
      { ...request, deliveryPolicy: { timeoutMs: 5000 } },
    ].map(requestDigest);
    expect(new Set(digests).size).toBe(digests.length);
    expect(requestDigest({ ...request, flowKey: "invoices", deliveryPolicy: {} })).toBe(
      requestDigest({ ...request, flowKey: "invoices" }),
    );
  });
});
