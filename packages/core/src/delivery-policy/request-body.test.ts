import { describe, expect, it } from "vitest";
import { buildDeliveryRequest } from "../signing.ts";
import {
  buildRequestBody,
  envelopeBody,
  isJsonContentType,
  JSON_CONTENT_TYPE,
  mediaTypeOf,
  parsesAsJson,
  TEXT_CONTENT_TYPE,
} from "./request-body.ts";

const scheduledTime = new Date("2026-12-01T10:00:00Z");

describe("the envelope", () => {
  it("is byte for byte the body deliveries without a policy send today", () => {
    const payload = '{"orderId":42,"note":"café ☕ \\"quoted\\"\\n"}';
    const expected =
      '{"payload":"{\\"orderId\\":42,\\"note\\":\\"café ☕ \\\\\\"quoted\\\\\\"\\\\n\\"}","scheduledTime":"2026-12-01T10:00:00.000Z"}';
    const built = buildRequestBody({ method: "POST", body: "envelope", payload, scheduledTime });
    expect(built).toEqual({ body: expected, contentType: "application/json" });
    expect(Buffer.from(built.body ?? "", "utf8").equals(Buffer.from(expected, "utf8"))).toBe(true);
    // The same bytes as the request signing builds (what the worker sends).
    const signed = buildDeliveryRequest({
      webhookId: "evt_1",
      payload,
      scheduledTime,
      signingSecret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      now: new Date(),
    });
    expect(built.body).toBe(signed.body);
    expect(built.contentType).toBe(signed.headers["Content-Type"]);
  });

  it("writes the scheduled time with milliseconds from a Date or any ISO string", () => {
    expect(envelopeBody("x", "2026-12-01T12:00:00+02:00")).toBe(
      '{"payload":"x","scheduledTime":"2026-12-01T10:00:00.000Z"}',
    );
    expect(envelopeBody("", scheduledTime)).toBe('{"payload":"","scheduledTime":"2026-12-01T10:00:00.000Z"}');
  });

  it("is sent by PUT and PATCH too, and typed by the client's own Content-Type when it set one", () => {
    for (const method of ["PUT", "PATCH"] as const) {
      expect(buildRequestBody({ method, body: "envelope", payload: "x", scheduledTime }).body).toBe(
        envelopeBody("x", scheduledTime),
      );
    }
    expect(
      buildRequestBody({
        method: "POST",
        body: "envelope",
        payload: "x",
        scheduledTime,
        headers: { "content-type": "application/vnd.acme+json" },
      }).contentType,
    ).toBe("application/vnd.acme+json");
  });
});

describe("a raw body", () => {
  it("is the payload itself, typed application/json when it parses as JSON", () => {
    expect(buildRequestBody({ method: "POST", body: "raw", payload: '{"a":1}', scheduledTime })).toEqual({
      body: '{"a":1}',
      contentType: JSON_CONTENT_TYPE,
    });
    expect(buildRequestBody({ method: "PUT", body: "raw", payload: " [1, 2] ", scheduledTime }).contentType).toBe(
      JSON_CONTENT_TYPE,
    );
  });

  it("is typed text/plain when it is not JSON", () => {
    expect(buildRequestBody({ method: "POST", body: "raw", payload: "hello", scheduledTime })).toEqual({
      body: "hello",
      contentType: TEXT_CONTENT_TYPE,
    });
    expect(TEXT_CONTENT_TYPE).toBe("text/plain; charset=utf-8");
    expect(buildRequestBody({ method: "POST", body: "raw", payload: "", scheduledTime }).contentType).toBe(
      TEXT_CONTENT_TYPE,
    );
  });

  it("takes the client's Content-Type in any case over the guess", () => {
    const built = buildRequestBody({
      method: "PATCH",
      body: "raw",
      payload: '{"a":1}',
      scheduledTime,
      headers: { "CONTENT-type": "application/x-www-form-urlencoded" },
    });
    expect(built).toEqual({ body: '{"a":1}', contentType: "application/x-www-form-urlencoded" });
  });
});

describe("GET and DELETE", () => {
  it.each(["GET", "DELETE"] as const)("%s sends no body and no Content-Type, whatever the mode", (method) => {
    for (const body of ["envelope", "raw"] as const) {
      expect(
        buildRequestBody({ method, body, payload: "{}", scheduledTime, headers: { "Content-Type": "text/csv" } }),
      ).toEqual({ body: undefined, contentType: undefined });
    }
  });
});

describe("content types", () => {
  it("reads the media type without parameters, in any case", () => {
    expect(mediaTypeOf(" Application/JSON ; charset=utf-8")).toBe("application/json");
    expect(isJsonContentType("application/json")).toBe(true);
    expect(isJsonContentType("application/problem+json; charset=utf-8")).toBe(true);
    expect(isJsonContentType("APPLICATION/LD+JSON")).toBe(true);
    expect(isJsonContentType("application/jsonl")).toBe(false);
    expect(isJsonContentType("text/json-ish")).toBe(false);
    expect(isJsonContentType("+json")).toBe(false);
    expect(isJsonContentType("text/plain")).toBe(false);
  });

  it("parsesAsJson is JSON.parse's judgement", () => {
    expect(parsesAsJson("null")).toBe(true);
    expect(parsesAsJson('"s"')).toBe(true);
    expect(parsesAsJson("{a:1}")).toBe(false);
    expect(parsesAsJson("")).toBe(false);
  });
});
