import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "./config.ts";
import { loadEnvFile } from "./env-file.ts";

// loadEnvFile changes process.env: each test removes what it set.
const VARIABLES = ["PUNCTUAL_ENV_FILE", "ENV_FILE_TEST_SETTING"];
const folder = mkdtempSync(join(tmpdir(), "env-file-"));

afterEach(() => {
  for (const name of VARIABLES) delete process.env[name];
});
afterAll(() => rmSync(folder, { recursive: true, force: true }));

describe("loadEnvFile", () => {
  it("reads the file PUNCTUAL_ENV_FILE names, and a variable already set wins over it", () => {
    const file = join(folder, "settings.env");
    writeFileSync(file, "ENV_FILE_TEST_SETTING=from-file\n");
    process.env.PUNCTUAL_ENV_FILE = file;
    expect(loadEnvFile()).toBe(file);
    expect(process.env.ENV_FILE_TEST_SETTING).toBe("from-file");

    writeFileSync(file, "ENV_FILE_TEST_SETTING=changed\n");
    expect(loadEnvFile()).toBe(file);
    expect(process.env.ENV_FILE_TEST_SETTING).toBe("from-file");
  });

  it("reads no file at all with PUNCTUAL_ENV_FILE=none", () => {
    process.env.PUNCTUAL_ENV_FILE = "none";
    expect(loadEnvFile()).toBeUndefined();
    expect(process.env.ENV_FILE_TEST_SETTING).toBeUndefined();
  });

  it("refuses a PUNCTUAL_ENV_FILE that does not exist, naming it", () => {
    const missing = join(folder, "missing.env");
    process.env.PUNCTUAL_ENV_FILE = missing;
    expect(() => loadEnvFile()).toThrow(ConfigError);
    expect(() => loadEnvFile()).toThrow(`PUNCTUAL_ENV_FILE names ${missing}, which does not exist`);
  });

  it("reads nothing when the file it is given does not exist", () => {
    expect(loadEnvFile(join(folder, "no-such.env"))).toBeUndefined();
  });
});
