import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import express from "express";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorHandler, notFoundHandler } from "../middleware/errors.ts";
import { CONSOLE_CONTENT_SECURITY_POLICY, CONSOLE_NOT_BUILT, consoleApp } from "./console-routes.ts";

const INDEX =
  '<!doctype html><title>console</title><script type="module" src="/console/assets/index-abc123.js"></script>';

function appServing(distDir: string) {
  const app = express();
  app.use(consoleApp(distDir));
  app.use(notFoundHandler());
  app.use(errorHandler());
  return app;
}

describe("console pages at /console", () => {
  let built: string;
  let missing: string;

  beforeAll(() => {
    built = mkdtempSync(path.join(tmpdir(), "console-dist-"));
    mkdirSync(path.join(built, "assets"));
    writeFileSync(path.join(built, "index.html"), INDEX);
    writeFileSync(path.join(built, "assets", "index-abc123.js"), "console.log('console');");
    writeFileSync(path.join(built, "robots.txt"), "User-agent: *\nDisallow: /\n");
    missing = path.join(built, "not-built");
  });

  afterAll(() => rmSync(built, { recursive: true, force: true }));

  it("serves index.html at /console and /console/, never cached, with the strict policy and no framing", async () => {
    for (const url of ["/console", "/console/"]) {
      const response = await request(appServing(built)).get(url);
      expect(response.status).toBe(200);
      expect(response.type).toBe("text/html");
      expect(response.text).toBe(INDEX);
      expect(response.headers["cache-control"]).toBe("no-store");
      expect(response.headers["content-security-policy"]).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
      expect(response.headers["x-frame-options"]).toBe("DENY");
    }
    expect(CONSOLE_CONTENT_SECURITY_POLICY).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "font-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    );
  });

  it("answers index.html for a view's path without a file (a reload of /console/events/evt_1)", async () => {
    const response = await request(appServing(built)).get("/console/events/evt_1?status=Sent");
    expect(response.status).toBe(200);
    expect(response.text).toBe(INDEX);
    expect(response.headers["cache-control"]).toBe("no-store");
    expect(response.headers["content-security-policy"]).toBe(CONSOLE_CONTENT_SECURITY_POLICY);
  });

  it("serves hashed assets with a year-long immutable cache and other files revalidated", async () => {
    const asset = await request(appServing(built)).get("/console/assets/index-abc123.js");
    expect(asset.status).toBe(200);
    expect(asset.type).toBe("text/javascript");
    expect(asset.text).toBe("console.log('console');");
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(asset.headers["x-frame-options"]).toBe("DENY");

    const other = await request(appServing(built)).get("/console/robots.txt");
    expect(other.status).toBe(200);
    expect(other.headers["cache-control"]).toBe("no-cache");
  });

  it("answers 404 for a missing file under assets/ instead of the page", async () => {
    const response = await request(appServing(built)).get("/console/assets/index-gone.js");
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ message: "Not found" });
  });

  it("leaves /console/api and methods other than GET and HEAD to the rest of the app", async () => {
    const api = await request(appServing(built)).get("/console/api/session");
    expect(api.status).toBe(404);
    expect(api.body).toEqual({ message: "Not found" });
    expect(api.headers["content-security-policy"]).toBeUndefined();
    const posted = await request(appServing(built)).post("/console/events");
    expect(posted.status).toBe(404);
    const head = await request(appServing(built)).head("/console/cron-jobs");
    expect(head.status).toBe(200);
  });

  it("never serves a file outside the build: an encoded ../ path gets the page or a 404", async () => {
    writeFileSync(path.join(path.dirname(built), "outside-console.txt"), "outside");
    const page = await request(appServing(built)).get("/console/..%2foutside-console.txt");
    expect(page.status).toBe(200);
    expect(page.text).toBe(INDEX);
    const asset = await request(appServing(built)).get("/console/assets/..%2f..%2foutside-console.txt");
    expect(asset.status).toBe(404);
    expect(asset.text).not.toContain("outside");
    rmSync(path.join(path.dirname(built), "outside-console.txt"));
  });

  it("answers 503 with what to do when the console was not built", async () => {
    const response = await request(appServing(missing)).get("/console/events");
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ message: CONSOLE_NOT_BUILT });
    expect(response.body.message).toBe("The console is not built: run pnpm build");
  });
});
