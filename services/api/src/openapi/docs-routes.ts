import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import type { NextFunction, Request, Response } from "express";
import { defineRoute } from "../routing/route.ts";

/** Where the reference page loads its document from (the route in openapi-route.ts). */
export const OPENAPI_PATH = "/api/openapi.json";

// Scalar's self-contained browser bundle, served from node_modules: the page must work on machines
// without internet access, so nothing is loaded from a CDN (fonts included: `withDefaultFonts`).
const scalarBundle = createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");

const SCALAR_CONFIGURATION = {
  url: OPENAPI_PATH,
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: "never",
  hideClientButton: false,
  persistAuth: false,
  authentication: { preferredSecurityScheme: "apiKey" },
  defaultOpenAllTags: false,
  // The "Ask AI" agent talks to Scalar's hosted service; this page stays on this server.
  agent: { disabled: true },
  metaData: { title: "Punctual API reference" },
};

/** The page's one inline script: it starts Scalar with the configuration above, the same on every answer. */
const START_SCRIPT = `Scalar.createApiReference("#app", ${JSON.stringify(SCALAR_CONFIGURATION)});`;

const PAGE = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>Punctual API reference</title>
    <link rel="icon" href="data:," />
  </head>
  <body>
    <div id="app"></div>
    <script src="/docs/scalar.js"></script>
    <script>${START_SCRIPT}</script>
  </body>
</html>
`;

/**
 * Everything loads from this origin; the policy makes any attempt to reach elsewhere fail visibly in
 * the browser (and in the browser test) instead of hanging on a machine without internet access.
 * Scripts are Scalar's file and the start script, allowed by its hash: no other inline script runs,
 * so text the page shows from the document could not become one. Scalar adds its styles as
 * `<style>` elements and `style` attributes at run time, which only `'unsafe-inline'` allows.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  `script-src 'self' 'sha256-${createHash("sha256").update(START_SCRIPT, "utf8").digest("base64")}'`,
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "worker-src 'self' blob:",
  "frame-ancestors 'self'",
].join("; ");

/** Contract §8: the interactive API reference at /docs (Scalar), reading /api/openapi.json. */
const referencePageRoute = defineRoute({
  method: "get",
  path: "/docs",
  operationId: "getApiReference",
  summary: "Interactive API reference (HTML)",
  tag: "Operations",
  security: "none",
  responses: { "200": { description: "An HTML page.", content: { "text/html": { schema: { type: "string" } } } } },
  handler: () => (_req: Request, res: Response) => {
    res.setHeader("Content-Security-Policy", CONTENT_SECURITY_POLICY);
    res.type("html").send(PAGE);
  },
});

const referenceScriptRoute = defineRoute({
  method: "get",
  path: "/docs/scalar.js",
  operationId: "getApiReferenceScript",
  summary: "The reference page's script (served locally, no CDN)",
  tag: "Operations",
  security: "none",
  responses: {
    "200": { description: "JavaScript.", content: { "text/javascript": { schema: { type: "string" } } } },
  },
  handler: () => (_req: Request, res: Response, next: NextFunction) => {
    // `dotfiles: "allow"`: pnpm keeps packages under node_modules/.pnpm.
    const options = {
      maxAge: "1h",
      dotfiles: "allow" as const,
      headers: { "Content-Type": "text/javascript; charset=utf-8" },
    };
    res.sendFile(scalarBundle, options, (err) => {
      if (err) next(err);
    });
  },
});

export const docsRoutes = [referencePageRoute, referenceScriptRoute];
