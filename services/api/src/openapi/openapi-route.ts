import type { Request, Response } from "express";
import { defineRoute } from "../routing/route.ts";

export interface OpenApiRouteDeps {
  /** Builds the document for this deployment (given by the app, which knows every route). */
  openApiDocument: () => unknown;
}

/** GET /api/openapi.json: the document for this deployment's limits, built on first use. */
export const openApiRoute = defineRoute({
  method: "get",
  path: "/api/openapi.json",
  operationId: "getOpenApiDocument",
  summary: "This document",
  tag: "Operations",
  security: "none",
  responses: { "200": { description: "The OpenAPI 3.1 document.", json: { type: "object" } } },
  handler: (deps: OpenApiRouteDeps) => {
    let body: string | undefined;
    return (_req: Request, res: Response) => {
      body ??= JSON.stringify(deps.openApiDocument());
      res.type("json").send(body);
    };
  },
});
