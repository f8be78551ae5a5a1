import { describe, expect, it } from "vitest";
import { webhookRequestOf } from "./webhook-form.ts";

describe("the webhook form", () => {
  it("sends the URL trimmed and the checked types in the API's order", () => {
    expect(webhookRequestOf(" https://ops.test/hook ", new Set(["quota.reached", "event.failed"]))).toEqual({
      body: { url: "https://ops.test/hook", types: ["event.failed", "quota.reached"] },
    });
  });

  it("asks for a URL and for at least one type", () => {
    expect(webhookRequestOf("  ", new Set(["event.failed"]))).toEqual({
      problem: "Please enter the URL the notices are sent to",
    });
    expect(webhookRequestOf("https://ops.test/hook", new Set())).toEqual({
      problem: "Please choose at least one type of notice",
    });
  });
});
