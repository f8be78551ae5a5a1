import { describe, expect, it } from "vitest";
import { z } from "zod";
import { parseInput } from "../validation.ts";
import type { DeliveryPolicy } from "./policy.ts";
import {
  BODY_ONE_OF,
  DeliveryPolicySchema,
  deliveryPolicyShape,
  duplicateHeader,
  EMPTY_HEADER_NAME,
  HEADERS_OBJECT,
  HEADERS_TOO_LARGE,
  headerCannotBeSet,
  headerValueCharacters,
  headerValueLineBreak,
  headerValueNotString,
  headerValueRedacted,
  invalidHeaderName,
  isReservedHeaderName,
  MAX_MAX_AGE_MS,
  METHOD_ONE_OF,
  RAW_PAYLOAD_NOT_JSON,
  RETRY_ATTEMPTS_RANGE,
  RETRY_BACKOFF,
  RETRY_BOTH_FORMS,
  RETRY_DELAY_RANGE,
  RETRY_DELAYS_LIST,
  RETRY_INITIAL_DELAY_RANGE,
  RETRY_JITTER,
  RETRY_MAX_AGE_RANGE,
  RETRY_MAX_BELOW_INITIAL,
  RETRY_MAX_DELAY_RANGE,
  RETRY_OBJECT,
  RETRY_STOP_ON_STATUS,
  rawPayloadNotJson,
  rawPayloadProblem,
  refineRawPayload,
  TIMEOUT_RANGE,
  TOO_MANY_HEADERS,
  unknownRetryField,
} from "./policy-schema.ts";

/** A create body as the API would build it: its own fields, the policy spread in, the raw rule. */
const CreateBody = z
  .strictObject({ payload: z.string(), destination: z.string(), ...deliveryPolicyShape })
  .superRefine(refineRawPayload);

const base = { payload: "{}", destination: "https://example.com/hook" };

/** The sentence the API would answer for this policy in a create body (400 `{"message": …}`). */
function refusal(policy: Record<string, unknown>): string {
  try {
    parseInput(CreateBody, { ...base, ...policy });
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("accepted");
}

const parsed = (policy: Record<string, unknown>) => parseInput(DeliveryPolicySchema, policy);

describe("the policy fields", () => {
  it("are all optional, and a body without them parses to no policy field at all", () => {
    expect(parseInput(CreateBody, base)).toEqual(base);
    expect(parsed({})).toEqual({});
  });

  it("keep only what the client gave, as given", () => {
    const policy = {
      method: "PUT",
      headers: { Authorization: "Bearer abc", "X-Trace": "1" },
      body: "raw",
      timeoutMs: 5000,
      retry: { delaysMs: [100, 200], maxAgeMs: 60_000, stopOnStatus: [404, 410] },
    };
    const stored: DeliveryPolicy = parsed(policy);
    expect(stored).toEqual(policy);
    expect(parseInput(CreateBody, { ...base, ...policy })).toEqual({ ...base, ...policy });
  });

  it("refuse an unknown field of the organization default as every body does", () => {
    expect(() => parsed({ methd: "POST" })).toThrow("Unknown field 'methd'");
  });
});

describe("method", () => {
  it.each(["POST", "PUT", "PATCH", "GET", "DELETE"])("accepts %s", (method) => {
    expect(parsed({ method })).toEqual({ method });
  });

  it.each([["post"], ["HEAD"], ["OPTIONS"], [""], [1], [null], [["POST"]]])("refuses %j", (method) => {
    expect(refusal({ method })).toBe(METHOD_ONE_OF);
  });

  it("has the contract's sentence", () => {
    expect(METHOD_ONE_OF).toBe("'method' must be one of POST, PUT, PATCH, GET, DELETE");
  });
});

describe("body", () => {
  it("accepts envelope and raw", () => {
    expect(parsed({ body: "envelope" })).toEqual({ body: "envelope" });
    expect(parsed({ body: "raw" })).toEqual({ body: "raw" });
  });

  it.each([["RAW"], ["json"], [true], [null]])("refuses %j", (body) => {
    expect(refusal({ body })).toBe(BODY_ONE_OF);
  });
});

describe("timeoutMs", () => {
  it("accepts integers from 1000 to 60000", () => {
    expect(parsed({ timeoutMs: 1000 })).toEqual({ timeoutMs: 1000 });
    expect(parsed({ timeoutMs: 60_000 })).toEqual({ timeoutMs: 60_000 });
  });

  it.each([[999], [60_001], [1500.5], ["5000"], [null], [Number.NaN]])("refuses %j", (timeoutMs) => {
    expect(refusal({ timeoutMs })).toBe(TIMEOUT_RANGE);
  });

  it("names the field and its bounds", () => {
    expect(TIMEOUT_RANGE).toBe("'timeoutMs' must be an integer from 1000 to 60000");
  });
});

describe("headers", () => {
  it("accepts up to 20 headers and keeps names as written", () => {
    const headers = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`X-Header-${i}`, `v${i}`]));
    expect(parsed({ headers })).toEqual({ headers });
    expect(parsed({ headers: {} })).toEqual({ headers: {} });
  });

  it("refuses a 21st header", () => {
    const headers = Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`X-H-${i}`, "v"]));
    expect(refusal({ headers })).toBe(TOO_MANY_HEADERS);
    expect(TOO_MANY_HEADERS).toBe("'headers' must have at most 20 headers");
  });

  it("accepts 4096 bytes of names and values, and refuses one more", () => {
    expect(parsed({ headers: { "X-Big": "a".repeat(4096 - 5) } })).toBeDefined();
    expect(refusal({ headers: { "X-Big": "a".repeat(4096 - 4) } })).toBe(HEADERS_TOO_LARGE);
    // Counted over all headers together.
    expect(refusal({ headers: { "X-A": "a".repeat(2046), "X-B": "b".repeat(2046) } })).toBe(HEADERS_TOO_LARGE);
  });

  it.each([[null], [[]], ["X-A: 1"], [3]])("refuses %j as the headers object", (headers) => {
    expect(refusal({ headers })).toBe(HEADERS_OBJECT);
  });

  it.each([
    "Host",
    "host",
    "Content-Length",
    "Transfer-Encoding",
    "Connection",
    "User-Agent",
    "USER-AGENT",
    "Keep-Alive",
    "Upgrade",
    "Expect",
    "X-Jiter-Signature",
    "x-jiter-request-timestamp",
    "X-JITER-Anything",
    "webhook-id",
    "Webhook-Signature",
    "WEBHOOK-timestamp",
  ])("refuses %s with the name as written", (name) => {
    expect(refusal({ headers: { [name]: "x" } })).toBe(`Header '${name}' cannot be set`);
    expect(headerCannotBeSet(name)).toBe(`Header '${name}' cannot be set`);
  });

  it("lets through names that only resemble the reserved ones", () => {
    for (const name of ["X-Host", "Content-Type", "X-Jiter", "Webhooks-Id", "X-Webhook-Id", "Authorization"]) {
      expect(isReservedHeaderName(name)).toBe(false);
    }
  });

  it.each(["X Header", "X-Header:", "Ünïcode", "X(1)", "a/b", "X-A\n", '"quoted"'])("refuses the name %j", (name) => {
    expect(refusal({ headers: { [name]: "x" } })).toBe(invalidHeaderName(name));
  });

  it("accepts every tchar in a name", () => {
    const name = "!#$%&'*+-.^_`|~0-9azAZ";
    expect(parsed({ headers: { [name]: "x" } })).toEqual({ headers: { [name]: "x" } });
  });

  it("refuses an empty name", () => {
    expect(refusal({ headers: { "": "x" } })).toBe(EMPTY_HEADER_NAME);
  });

  it("refuses two names that differ only in case", () => {
    expect(refusal({ headers: { "X-Trace": "1", "x-trace": "2" } })).toBe(duplicateHeader("X-Trace", "x-trace"));
    expect(duplicateHeader("X-Trace", "x-trace")).toBe(
      "Headers 'X-Trace' and 'x-trace' are the same header: header names are case-insensitive",
    );
  });

  it.each([[1], [true], [null], [["a"]], [{ a: 1 }]])("refuses the value %j", (value) => {
    expect(refusal({ headers: { "X-A": value } })).toBe(headerValueNotString("X-A"));
  });

  it.each(["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\u0000b"])("refuses the value %j", (value) => {
    expect(refusal({ headers: { "X-A": value } })).toBe(headerValueLineBreak("X-A"));
  });

  it.each(["a\u0001b", "a\u007fb", "emoji 🙂", "ā"])("refuses the value %j", (value) => {
    expect(refusal({ headers: { "X-A": value } })).toBe(headerValueCharacters("X-A"));
  });

  it("refuses the placeholder of a redacted answer as a sensitive header's value, and takes it for another header", () => {
    expect(refusal({ headers: { Authorization: "[redacted]" } })).toBe(headerValueRedacted("Authorization"));
    expect(refusal({ headers: { "X-Api-Key": "[redacted]" } })).toBe(headerValueRedacted("X-Api-Key"));
    expect(parsed({ headers: { "X-Note": "[redacted]" } })).toEqual({ headers: { "X-Note": "[redacted]" } });
  });

  it("accepts tabs, spaces, printable ASCII, Latin-1 and the empty value", () => {
    const headers = { "X-A": "\tBearer a b ~!", "X-B": "café", "X-C": "" };
    expect(parsed({ headers })).toEqual({ headers });
  });
});

describe("retry", () => {
  it("accepts a fixed schedule of 0 to 20 delays of 100 ms to 24 h", () => {
    expect(parsed({ retry: { delaysMs: [] } })).toEqual({ retry: { delaysMs: [] } });
    const delaysMs = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 100 : 86_400_000));
    expect(parsed({ retry: { delaysMs } })).toEqual({ retry: { delaysMs } });
  });

  it("refuses a schedule that is not a list of at most 20", () => {
    expect(refusal({ retry: { delaysMs: Array.from({ length: 21 }, () => 1000) } })).toBe(RETRY_DELAYS_LIST);
    expect(refusal({ retry: { delaysMs: 1000 } })).toBe(RETRY_DELAYS_LIST);
    expect(refusal({ retry: { delaysMs: null } })).toBe(RETRY_DELAYS_LIST);
  });

  it.each([[99], [86_400_001], [150.5], ["1000"], [null]])("refuses the delay %j", (delay) => {
    expect(refusal({ retry: { delaysMs: [1000, delay] } })).toBe(RETRY_DELAY_RANGE);
  });

  const exponential = { attempts: 5, backoff: "exponential", initialDelayMs: 1000, maxDelayMs: 60_000 };

  it("accepts the exponential form, with or without jitter", () => {
    expect(parsed({ retry: exponential })).toEqual({ retry: exponential });
    expect(parsed({ retry: { ...exponential, jitter: true } })).toEqual({ retry: { ...exponential, jitter: true } });
    const bounds = { attempts: 0, backoff: "exponential", initialDelayMs: 100, maxDelayMs: 100 };
    expect(parsed({ retry: bounds })).toEqual({ retry: bounds });
    expect(parsed({ retry: { ...exponential, attempts: 20, maxDelayMs: 86_400_000 } })).toBeDefined();
  });

  it("refuses each bad part of the exponential form with its own sentence", () => {
    expect(refusal({ retry: { ...exponential, attempts: 21 } })).toBe(RETRY_ATTEMPTS_RANGE);
    expect(refusal({ retry: { ...exponential, attempts: -1 } })).toBe(RETRY_ATTEMPTS_RANGE);
    expect(refusal({ retry: { ...exponential, attempts: 1.5 } })).toBe(RETRY_ATTEMPTS_RANGE);
    expect(refusal({ retry: { ...exponential, attempts: undefined } })).toBe(RETRY_ATTEMPTS_RANGE);
    expect(refusal({ retry: { ...exponential, backoff: "linear" } })).toBe(RETRY_BACKOFF);
    expect(refusal({ retry: { ...exponential, backoff: undefined } })).toBe(RETRY_BACKOFF);
    expect(refusal({ retry: { ...exponential, initialDelayMs: 99 } })).toBe(RETRY_INITIAL_DELAY_RANGE);
    expect(refusal({ retry: { ...exponential, initialDelayMs: undefined } })).toBe(RETRY_INITIAL_DELAY_RANGE);
    expect(refusal({ retry: { ...exponential, maxDelayMs: 86_400_001 } })).toBe(RETRY_MAX_DELAY_RANGE);
    expect(refusal({ retry: { ...exponential, initialDelayMs: 5000, maxDelayMs: 4999 } })).toBe(
      RETRY_MAX_BELOW_INITIAL,
    );
    expect(refusal({ retry: { ...exponential, jitter: "yes" } })).toBe(RETRY_JITTER);
  });

  it("refuses both forms at once with one sentence", () => {
    expect(refusal({ retry: { ...exponential, delaysMs: [1000] } })).toBe(RETRY_BOTH_FORMS);
    expect(refusal({ retry: { delaysMs: [1000], jitter: true } })).toBe(RETRY_BOTH_FORMS);
    expect(RETRY_BOTH_FORMS).toBe("'retry' must have either 'delaysMs' or 'attempts' with 'backoff', not both");
  });

  it("refuses a retry with no schedule, or that is not an object", () => {
    for (const retry of [{}, { maxAgeMs: 1000 }, null, [], 3, "exponential"]) {
      expect(refusal({ retry })).toBe(RETRY_OBJECT);
    }
  });

  it("refuses an unknown field inside retry", () => {
    expect(refusal({ retry: { delaysMs: [], delays: [] } })).toBe(unknownRetryField("delays"));
    expect(unknownRetryField("delays")).toBe("Unknown field 'retry.delays'");
  });

  it("accepts maxAgeMs from 1 ms to 30 days with either form", () => {
    expect(parsed({ retry: { delaysMs: [], maxAgeMs: 1 } })).toEqual({ retry: { delaysMs: [], maxAgeMs: 1 } });
    expect(parsed({ retry: { ...exponential, maxAgeMs: MAX_MAX_AGE_MS } })).toEqual({
      retry: { ...exponential, maxAgeMs: MAX_MAX_AGE_MS },
    });
    expect(MAX_MAX_AGE_MS).toBe(30 * 24 * 3_600_000);
  });

  it.each([[0], [-1], [MAX_MAX_AGE_MS + 1], [1.5], ["60000"], [null]])("refuses maxAgeMs %j", (maxAgeMs) => {
    expect(refusal({ retry: { delaysMs: [], maxAgeMs } })).toBe(RETRY_MAX_AGE_RANGE);
  });

  it("accepts stopOnStatus as distinct 4xx codes, the empty list included", () => {
    expect(parsed({ retry: { delaysMs: [], stopOnStatus: [400, 404, 499] } })).toEqual({
      retry: { delaysMs: [], stopOnStatus: [400, 404, 499] },
    });
    expect(parsed({ retry: { ...exponential, stopOnStatus: [] } })).toEqual({
      retry: { ...exponential, stopOnStatus: [] },
    });
  });

  it.each([[[404, 404]], [[399]], [[500]], [[404.5]], [["404"]], [404], [null]])(
    "refuses stopOnStatus %j",
    (stopOnStatus) => {
      expect(refusal({ retry: { delaysMs: [], stopOnStatus } })).toBe(RETRY_STOP_ON_STATUS);
    },
  );
});

describe("a raw body typed as JSON", () => {
  it("must hold JSON", () => {
    expect(refusal({ payload: "not json", body: "raw", headers: { "Content-Type": "application/json" } })).toBe(
      RAW_PAYLOAD_NOT_JSON,
    );
    expect(RAW_PAYLOAD_NOT_JSON).toBe(
      "'payload' must be valid JSON when 'body' is 'raw' and Content-Type is application/json",
    );
  });

  it("finds the Content-Type in any case and reads +json types and parameters", () => {
    expect(
      rawPayloadProblem("nope", { body: "raw", headers: { "content-TYPE": "Application/JSON; charset=utf-8" } }),
    ).toBe(RAW_PAYLOAD_NOT_JSON);
    expect(
      rawPayloadProblem("nope", { body: "raw", headers: { "Content-Type": "application/cloudevents+json" } }),
    ).toBe(rawPayloadNotJson("application/cloudevents+json"));
  });

  it("lets through JSON, other types, no Content-Type, and the envelope", () => {
    const json = { "Content-Type": "application/json" };
    expect(rawPayloadProblem('{"a":1}', { body: "raw", headers: json })).toBeUndefined();
    expect(rawPayloadProblem("42", { body: "raw", headers: json })).toBeUndefined();
    expect(rawPayloadProblem("nope", { body: "raw", headers: { "Content-Type": "text/plain" } })).toBeUndefined();
    expect(
      rawPayloadProblem("nope", { body: "raw", headers: { "Content-Type": "application/jsonx" } }),
    ).toBeUndefined();
    expect(rawPayloadProblem("nope", { body: "raw" })).toBeUndefined();
    expect(rawPayloadProblem("nope", { body: "envelope", headers: json })).toBeUndefined();
    expect(rawPayloadProblem("nope", { headers: json })).toBeUndefined();
    expect(rawPayloadProblem("nope", null)).toBeUndefined();
    expect(parseInput(CreateBody, { ...base, payload: "nope", body: "raw" })).toMatchObject({ payload: "nope" });
  });
});

describe("the OpenAPI view", () => {
  it("documents each field's type for the request schemas", () => {
    const json = z.toJSONSchema(DeliveryPolicySchema, { io: "input" }) as {
      properties: Record<string, Record<string, unknown>>;
      required?: string[];
    };
    expect(json.required ?? []).toEqual([]);
    expect(json.properties.method).toMatchObject({ type: "string", enum: ["POST", "PUT", "PATCH", "GET", "DELETE"] });
    expect(json.properties.headers).toMatchObject({ type: "object", additionalProperties: { type: "string" } });
    expect(json.properties.body).toMatchObject({ type: "string", enum: ["envelope", "raw"] });
    expect(json.properties.timeoutMs).toMatchObject({ type: "integer", minimum: 1000, maximum: 60_000 });
    expect(json.properties.retry?.oneOf).toHaveLength(2);
  });
});
