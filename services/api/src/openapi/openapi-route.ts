import type { Request, Response } from "express";
import { createOpenApiDocument } from "./openapi-document.ts";

/** GET /api/openapi.json: the document for this deployment's limits, built on first use. */
export function openApiRoute(config: Parameters<typeof createOpenApiDocument>[0]) {
  let body: string | undefined;
  return (_req: Request, res: Response) => {
    body ??= JSON.stringify(createOpenApiDocument(config));
    res.type("json").send(body);
  };
}
