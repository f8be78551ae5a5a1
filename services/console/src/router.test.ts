import { describe, expect, it } from "vitest";
import { match } from "./router.tsx";

describe("match", () => {
  it("gives the named segments of a matching path, decoded", () => {
    expect(match("/events/:id", "/events/evt_1")).toEqual({ id: "evt_1" });
    expect(match("/organizations/:id", "/organizations/org%5F1")).toEqual({ id: "org_1" });
    expect(match("/", "/")).toEqual({});
    expect(match("/events", "/events/")).toEqual({});
  });

  it("is null for another path or another number of segments", () => {
    expect(match("/events/:id", "/events")).toBeNull();
    expect(match("/events/:id", "/cron-jobs/cron_1")).toBeNull();
    expect(match("/events", "/events/evt_1")).toBeNull();
  });
});
