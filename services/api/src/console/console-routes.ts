import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import express, { type NextFunction, type Request, type Response, Router } from "express";
import { documentRoute, errorResponse } from "../routing/route.ts";

/** Where the console is served (services/console, built by `pnpm build`). */
export const CONSOLE_PATH = "/console";

/** The console's build output, next to this service in the repository (and in the image). */
export const CONSOLE_DIST = fileURLToPath(new URL("../../../console/dist/", import.meta.url));

export const CONSOLE_NOT_BUILT = "The console is not built: run pnpm build";

/**
 * Everything the page loads is a file of its own build: no inline script or style, nothing from
 * another origin, no framing, and forms and fetches only to this origin.
 */
export const CONSOLE_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/** Vite names its bundles by content hash under assets/: a file there never changes. */
const ASSETS_DIR = "/assets/";
const IMMUTABLE = "public, max-age=31536000, immutable";

const HTML = { "text/html": { schema: { type: "string" } } };

/** The console's declarations, for the document only: the pages are files served below. */
export const consoleRoutes = [
  documentRoute({
    method: "get",
    path: CONSOLE_PATH,
    operationId: "getConsole",
    summary: "Web console (HTML)",
    description:
      "The single-page console: organizations sign in with an API key, the operator with `ADMIN_TOKEN` " +
      "(`POST /console/api/session`, `POST /console/api/operator-session`). Served with a strict " +
      "`Content-Security-Policy` and `X-Frame-Options: DENY`; `index.html` is never cached.",
    tag: "Operations",
    security: "none",
    responses: {
      "200": { description: "The console's page.", content: HTML },
      "503": errorResponse("The console was not built (`pnpm build` builds it).", CONSOLE_NOT_BUILT),
    },
  }),
  documentRoute({
    method: "get",
    path: `${CONSOLE_PATH}/{path}`,
    operationId: "getConsolePath",
    summary: "The console's files; any other path is its page",
    description:
      "Files of the console's build (hashed under `assets/`, cached for a year); any path without a " +
      "file answers the page itself, so a view's address can be reloaded or shared. A missing file " +
      "under `assets/` is a 404.",
    tag: "Operations",
    security: "none",
    parameters: [
      {
        name: "path",
        in: "path",
        required: true,
        description: "A file of the build (`assets/index-….js`) or a view (`events/evt_…`)",
        schema: { type: "string" },
      },
    ],
    responses: {
      "200": {
        description: "The file, or the console's page.",
        content: {
          ...HTML,
          "text/javascript": { schema: { type: "string" } },
          "text/css": { schema: { type: "string" } },
        },
      },
      "404": errorResponse("A missing file under `assets/`.", "Not found"),
      "503": errorResponse("The console was not built (`pnpm build` builds it).", CONSOLE_NOT_BUILT),
    },
  }),
];

function securityHeaders(res: Response): void {
  res.setHeader("Content-Security-Policy", CONSOLE_CONTENT_SECURITY_POLICY);
  res.setHeader("X-Frame-Options", "DENY");
  res.setHeader("X-Content-Type-Options", "nosniff");
  res.setHeader("Referrer-Policy", "no-referrer");
}

/**
 * Serves the console's build at /console: its files, and index.html for any other path (the page
 * routes itself). Its JSON API (/console/api/…) is someone else's: those paths pass through. The
 * build is looked for at each request, so a console built after the API started is served, and one
 * never built answers 503 with what to do.
 */
export function consoleApp(distDir: string = CONSOLE_DIST): Router {
  const router = Router();
  const indexFile = path.join(distDir, "index.html");
  const files = express.static(distDir, {
    index: false,
    redirect: false,
    fallthrough: true,
    setHeaders: (res, file) => {
      const relative = `/${path.relative(distDir, file).split(path.sep).join("/")}`;
      res.setHeader("Cache-Control", relative.startsWith(ASSETS_DIR) ? IMMUTABLE : "no-cache");
    },
  });

  // Named: the route walk of the OpenAPI test recognises the console's pages by it.
  router.use(CONSOLE_PATH, function consolePages(req: Request, res: Response, next: NextFunction) {
    if (req.method !== "GET" && req.method !== "HEAD") return next();
    if (req.path === "/api" || req.path.startsWith("/api/")) return next();
    securityHeaders(res);
    if (!existsSync(indexFile)) {
      res.status(503).setHeader("Cache-Control", "no-store").json({ message: CONSOLE_NOT_BUILT });
      return;
    }
    // The page itself is always fetched anew: it names the current build's hashed assets.
    if (req.path === "/" || req.path === "/index.html") return sendIndex(res, indexFile, next);
    files(req, res, () => {
      if (req.path.startsWith(ASSETS_DIR)) {
        res.status(404).json({ message: "Not found" });
        return;
      }
      sendIndex(res, indexFile, next);
    });
  });
  return router;
}

function sendIndex(res: Response, indexFile: string, next: NextFunction): void {
  res.setHeader("Cache-Control", "no-store");
  res.sendFile(indexFile, (error) => {
    if (error) next(error);
  });
}
