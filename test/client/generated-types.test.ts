import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  GENERATED_TYPES_PATH,
  generateOpenApiTypes,
  servedOpenApiDocument,
} from "../../packages/client/scripts/generate.ts";
import { createTestContext, type TestContext } from "../support/context.ts";
import { type LiveApi, startLiveApi } from "../support/live-api.ts";
import { repositoryRoot } from "../support/processes.ts";

// The client's types are generated from the API's OpenAPI document and committed. These checks keep
// them from drifting: a change to a route, a schema or a status that is not regenerated fails here
// (`pnpm client:generate` fixes it), and the generator reads the very document the API serves.

/** The document itself, which the client's types are generated from, needs no method. */
const NOT_WRAPPED = ["getOpenApiDocument"];

let context: TestContext;
let api: LiveApi;

beforeAll(async () => {
  context = await createTestContext();
  api = await startLiveApi(context);
});
afterAll(() => context?.close());

describe("packages/client/src/generated/openapi.ts", () => {
  it("is what pnpm client:generate writes from the current OpenAPI document", async () => {
    const committed = readFileSync(GENERATED_TYPES_PATH, "utf8");
    const generated = await generateOpenApiTypes();
    expect(committed === generated, "the client's generated types are stale: run pnpm client:generate").toBe(true);
  });

  it("is generated from the document a running API serves at /api/openapi.json", async () => {
    const response = await fetch(`${api.baseUrl}/api/openapi.json`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(servedOpenApiDocument());
  });

  it("has a client method for every operation under /api, each named by its operationId", () => {
    const sources = ["client.ts", "admin.ts"]
      .map((file) => readFileSync(join(repositoryRoot, "packages/client/src", file), "utf8"))
      .join("\n");
    const operationIds = Object.entries(servedOpenApiDocument().paths ?? {})
      .filter(([path]) => path.startsWith("/api/"))
      .flatMap(([, item]) => Object.values(item as Record<string, { operationId: string }>))
      .map((operation) => operation.operationId)
      .filter((operationId) => !NOT_WRAPPED.includes(operationId));
    expect(operationIds.length).toBeGreaterThan(20);
    // Each method hands its operationId to `unwrap`, which puts it on the PunctualError it throws.
    const wrapped = new Set([...sources.matchAll(/unwrap\(\s*"(\w+)"/g)].map((match) => match[1]));
    const missing = operationIds.filter((operationId) => !wrapped.has(operationId));
    expect(missing, "operations without a method in packages/client/src/client.ts or admin.ts").toEqual([]);
  });
});
