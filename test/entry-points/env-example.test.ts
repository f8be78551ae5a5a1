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

  // The quick start turns private destinations on; whoever copies the file must read, next to the
  // line and next to the README's `cp`, what that opens: internal services, readable through a
  // test delivery's answer.
  it("says beside ALLOW_PRIVATE_DESTINATIONS=true what it allows, and that it is not for production", () => {
    const all = text.split("\n");
    const at = all.indexOf("ALLOW_PRIVATE_DESTINATIONS=true");
    expect(at).toBeGreaterThan(0);
    let start = at;
    while (start > 0 && all[start - 1]?.startsWith("# ")) start--;
    const comment = all
      .slice(start, at)
      .map((line) => line.slice(2))
      .join(" ");
    for (const said of ["internal services", "POST /api/events/test", "answers with", "MUST be false in production"]) {
      expect(comment).toContain(said);
    }
  });

  it("is followed in the README's quick start by what its private destinations allow", () => {
    const readme = readFileSync(join(repositoryRoot, "README.md"), "utf8");
    const copied = readme.indexOf("cp .env.example .env");
    expect(copied).toBeGreaterThan(0);
    // The first paragraph about the setting after the quick start's `cp`, before step 2.
    const quickStart = readme.slice(copied, readme.indexOf("**2.", copied));
    const paragraph = quickStart.split("\n\n").find((part) => part.includes("ALLOW_PRIVATE_DESTINATIONS=true"));
    expect(paragraph).toBeDefined();
    for (const said of ["internal services", "POST /api/events/test", "never copy this `.env` to a server"]) {
      expect(paragraph).toContain(said);
    }
  });
});
