import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { API_DOCS_PATH, defaultOpenApiDocument, renderApiDocs } from "../../scripts/api-docs.ts";

interface Media {
  examples?: Record<string, { value?: { message?: string } }>;
}
interface Operation {
  responses?: Record<string, { content?: Record<string, Media> }>;
}

const METHODS = ["get", "post", "put", "patch", "delete"];

describe("docs/api.md", () => {
  const committed = readFileSync(API_DOCS_PATH, "utf8");
  const document = defaultOpenApiDocument();
  const rendered = renderApiDocs(document);

  it("is what scripts/api-docs.ts renders from the current OpenAPI document", () => {
    expect(committed === rendered, "docs/api.md is stale: run node --import tsx scripts/api-docs.ts").toBe(true);
  });

  it("has a section for every operation of the document, with each of its statuses and error messages", () => {
    const paths = document.paths as Record<string, Record<string, Operation>>;
    for (const [path, pathItem] of Object.entries(paths)) {
      for (const [method, operation] of Object.entries(pathItem)) {
        if (!METHODS.includes(method)) continue;
        const name = `${method.toUpperCase()} ${path}`;
        const start = rendered.indexOf(`\`${name}\` · auth:`);
        expect(start, name).toBeGreaterThan(0);
        const end = rendered.indexOf("\n### ", start);
        const section = rendered.slice(start, end === -1 ? undefined : end);
        for (const [status, response] of Object.entries(operation.responses ?? {})) {
          expect(section, `${name} ${status}`).toContain(`\n| ${status} | `);
          for (const media of Object.values(response.content ?? {})) {
            for (const example of Object.values(media.examples ?? {})) {
              const message = example.value?.message;
              if (message) expect(section, `${name} ${status}`).toContain(message.replace(/\|/g, "\\|"));
            }
          }
        }
      }
    }
  });

  it("shows how to cancel an event, as there is no DELETE for events", () => {
    expect(rendered).toContain(`-d '{"status":"Cancelled"}'`);
    expect(rendered).not.toContain("`DELETE /api/events");
  });
});
