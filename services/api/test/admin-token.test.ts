import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { ConfigError, type Logger } from "@punctual/core";
import { pino } from "pino";
import request from "supertest";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createTestContext, type TestContext, testConfig } from "../../../test/support/context.ts";
import { resolveAdminToken } from "../src/admin-token.ts";
import { startApi } from "../src/server.ts";

// ADMIN_TOKEN_FILE: the token the API generates on its first start (no default token anywhere),
// stored once with mode 0600 and used by every later start, and by the admin API.

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "punctual-admin-token-"));
});
afterEach(() => rm(directory, { recursive: true, force: true }));

/** A real pino logger whose lines are collected, to count what the API logged. */
function recordingLogger(): { logger: Logger; lines: () => Array<{ level: number; msg: string; path?: string }> } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines: () => lines.map((line) => JSON.parse(line)) };
}

describe("admin token file", () => {
  it("is generated once with mode 0600 and logged once, then reused by the next start", async () => {
    // A directory that does not exist yet, like a fresh volume's subdirectory.
    const path = join(directory, "state", "admin-token");
    const first = recordingLogger();
    const token = await resolveAdminToken({ ADMIN_TOKEN_FILE: path }, first.logger);
    expect(token).toMatch(/^adm_[A-Za-z0-9_-]{43}$/);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect((await readFile(path, "utf8")).trim()).toBe(token);
    expect(first.lines()).toHaveLength(1);
    expect(first.lines()[0]).toMatchObject({ level: 40, path });
    expect(first.lines()[0]?.msg).toContain(`cat ${path}`);
    // The token itself never reaches the log.
    expect(JSON.stringify(first.lines())).not.toContain(token);
    // No temporary file is left beside it.
    expect(await readdir(join(directory, "state"))).toEqual(["admin-token"]);

    const second = recordingLogger();
    expect(await resolveAdminToken({ ADMIN_TOKEN_FILE: path }, second.logger)).toBe(token);
    expect(second.lines()).toEqual([]);
  });

  it("ends with one token when many instances start together", async () => {
    const path = join(directory, "admin-token");
    const { logger, lines } = recordingLogger();
    const tokens = await Promise.all(
      Array.from({ length: 20 }, () => resolveAdminToken({ ADMIN_TOKEN_FILE: path }, logger)),
    );
    expect(new Set(tokens).size).toBe(1);
    expect((await readFile(path, "utf8")).trim()).toBe(tokens[0]);
    expect(lines()).toHaveLength(1);
    expect(await readdir(directory)).toEqual(["admin-token"]);
  });

  it("prefers ADMIN_TOKEN, and gives none without either setting", async () => {
    const path = join(directory, "admin-token");
    const { logger } = recordingLogger();
    const set = "q7Rz-Lm2v8KxTp4N-3hWc";
    expect(await resolveAdminToken({ ADMIN_TOKEN: set, ADMIN_TOKEN_FILE: path }, logger)).toBe(set);
    await expect(stat(path)).rejects.toThrow(/ENOENT/);
    expect(await resolveAdminToken({}, logger)).toBeUndefined();
  });

  it("uses an operator's file (trimmed), refuses a placeholder in it, warns when others can read it", async () => {
    const path = join(directory, "admin-token");
    await writeFile(path, "q7Rz-Lm2v8KxTp4N-3hWc\n", { mode: 0o644 });
    await chmod(path, 0o644);
    const { logger, lines } = recordingLogger();
    expect(await resolveAdminToken({ ADMIN_TOKEN_FILE: path }, logger)).toBe("q7Rz-Lm2v8KxTp4N-3hWc");
    expect(lines()[0]?.msg).toContain(`chmod 600 ${path}`);

    await writeFile(path, "change-me-please-0123456789\n");
    const refused = resolveAdminToken({ ADMIN_TOKEN_FILE: path }, logger);
    await expect(refused).rejects.toThrow(ConfigError);
    await expect(refused).rejects.toThrow(/^Invalid configuration:\n {2}ADMIN_TOKEN_FILE: the token in .* must not be/);
  });
});

describe("the API with ADMIN_TOKEN_FILE", () => {
  let context: TestContext;
  beforeAll(async () => {
    context = await createTestContext();
  });
  afterAll(() => context.close());

  const apiConfig = (overrides: Record<string, string>) =>
    testConfig({
      DATABASE_URL: context.config.DATABASE_URL,
      QUEUE_PREFIX: context.config.QUEUE_PREFIX,
      PORT: "0",
      HOST: "127.0.0.1",
      ...overrides,
    });

  it("accepts the token of the file it generated, and only that token", async () => {
    const path = join(directory, "admin-token");
    const api = await startApi(apiConfig({ ADMIN_TOKEN_FILE: path }), recordingLogger().logger);
    try {
      const token = (await readFile(path, "utf8")).trim();
      const base = `http://127.0.0.1:${api.port}`;
      const listed = await request(base).get("/api/admin/organizations").set("authorization", `Bearer ${token}`);
      expect(listed.status).toBe(200);
      const wrong = await request(base).get("/api/admin/organizations").set("authorization", `Bearer ${token}x`);
      expect(wrong.status).toBe(401);
    } finally {
      await api.stop();
    }
  });

  it("keeps the admin API off (404) without ADMIN_TOKEN and ADMIN_TOKEN_FILE", async () => {
    const api = await startApi(apiConfig({}), recordingLogger().logger);
    try {
      const answer = await request(`http://127.0.0.1:${api.port}`)
        .get("/api/admin/organizations")
        .set("authorization", "Bearer q7Rz-Lm2v8KxTp4N-3hWc");
      expect(answer.status).toBe(404);
    } finally {
      await api.stop();
    }
  });

  it("does not start with a placeholder in the token file", async () => {
    const path = join(directory, "admin-token");
    await writeFile(path, "changeme-changeme-changeme\n", { mode: 0o600 });
    await expect(startApi(apiConfig({ ADMIN_TOKEN_FILE: path }), recordingLogger().logger)).rejects.toThrow(
      /ADMIN_TOKEN_FILE: the token in .* must not be a placeholder \(it contains 'changeme'\)/,
    );
  });
});
