import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseEnv } from "node:util";
import { ConfigSchema, loadConfig } from "@punctual/core";
import { describe, expect, it } from "vitest";
import { repositoryRoot } from "../support/processes.ts";

// .env.example is the newcomer's list of settings: it must name exactly the settings the
// configuration knows, each commented-out line must show the real default, and the lines left
// active must make a valid configuration.

const text = readFileSync(join(repositoryRoot, ".env.example"), "utf8");
const SETTING = /^(#\s?)?([A-Z][A-Z0-9_]*)=(.*)$/;

/** Each setting line: its name, its value as written, and whether it is commented out. */
const lines = text
  .split("\n")
  .map((line) => SETTING.exec(line))
  .filter((match) => match !== null)
  .map(([, comment, name = "", value = ""]) => ({ name, value, commented: comment !== undefined }));

describe(".env.example", () => {
  it("lists every setting of the configuration once, and nothing else", () => {
    const listed = lines.map((line) => line.name);
    expect(new Set(listed).size).toBe(listed.length);
    expect([...listed].sort()).toEqual(Object.keys(ConfigSchema.shape).sort());
  });

  it("gives each commented-out setting its real default", () => {
    const defaults = loadConfig({});
    const commented = lines.filter((line) => line.commented);
    expect(commented.length).toBeGreaterThan(0);
    for (const { name, value } of commented) {
      // The value read as a .env file would read it (quotes removed), then parsed as the setting.
      const parsed = parseEnv(`${name}=${value}`)[name] ?? "";
      expect({ name, value: loadConfig({ [name]: parsed })[name as keyof typeof defaults] }).toEqual({
        name,
        value: defaults[name as keyof typeof defaults],
      });
    }
  });

  it("has active lines that make a valid configuration for a first local run", () => {
    const config = loadConfig(parseEnv(text));
    expect(config).toMatchObject({
      DATABASE_URL: "postgresql://postgres@127.0.0.1:5432/punctual",
      REDIS_URL: "redis://127.0.0.1:6379",
      PORT: 3000,
      WORKER_HEALTH_PORT: 3001,
      ALLOW_PRIVATE_DESTINATIONS: true,
    });
    expect(config.ADMIN_TOKEN).toBeUndefined();
    expect(config.ADMIN_TOKEN_FILE).toBeDefined();
  });
});
