import path from "node:path";
import { describe, expect, it } from "vitest";
import { buildConsole, root } from "../../../../scripts/bundles.ts";
import { EVENT_STATUSES } from "./types.ts";

interface ViteOutput {
  output: Array<{ type: "chunk"; moduleIds: string[] } | { type: "asset" }>;
}

describe("the console's record types", () => {
  it("come from @punctual/client as types only: its bundle holds no module of the client", async () => {
    const result = (await buildConsole({ write: false, logLevel: "silent" })) as ViteOutput | ViteOutput[];
    const modules = (Array.isArray(result) ? result : [result])
      .flatMap((output) => output.output)
      .flatMap((item) => (item.type === "chunk" ? item.moduleIds : []))
      .filter((id) => !id.startsWith("\0"))
      .map((id) => path.relative(root, id).split(path.sep).join("/"));
    expect(modules).toContain("services/console/src/api/types.ts");
    expect(modules.filter((id) => id.startsWith("packages/client/") || id.includes("openapi-fetch"))).toEqual([]);
  }, 60_000);

  it("offer every event status once in the filter's order", () => {
    expect(EVENT_STATUSES).toEqual(["Pending", "Queued", "Sent", "Failed To Send", "Failed To Queue", "Cancelled"]);
  });
});
