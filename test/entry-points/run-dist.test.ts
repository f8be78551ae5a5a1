import { execFile } from "node:child_process";
import { cp, mkdir, mkdtemp, readFile, rm, stat, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repositoryRoot } from "../support/processes.ts";

// scripts/run-dist.mjs (behind pnpm start, start:api and start:worker) builds dist/ when it is
// missing or older than a source, then runs the bundle. Tried on a copy of the launcher in a tree of
// its own, whose "build" only writes a small bundle and counts its runs: the repository's dist/
// is shared with whatever else is running.

const BUILDING = "Building Punctual (dist/ is missing or stale)…\n";

/** A stand-in for scripts/build.ts: writes dist/app.js, which prints its argv, and counts builds. */
const FAKE_BUILD = `import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
mkdirSync("dist", { recursive: true });
writeFileSync("dist/app.js", "console.log(JSON.stringify(process.argv.slice(1)));\\n");
mkdirSync("services/console/dist", { recursive: true });
writeFileSync("services/console/dist/index.html", "<!doctype html>\\n");
appendFileSync("builds.log", "built\\n");
if (process.env.FAIL_BUILD) process.exit(1);
`;

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "punctual-run-dist-"));
  await mkdir(join(root, "scripts"));
  await mkdir(join(root, "packages/x/src"), { recursive: true });
  await cp(join(repositoryRoot, "scripts/run-dist.mjs"), join(root, "scripts/run-dist.mjs"));
  await writeFile(join(root, "scripts/build.ts"), FAKE_BUILD);
  await writeFile(join(root, "packages/x/src/a.ts"), "export const a = 1;\n");
  // The launcher builds with `node --import tsx`, resolved from the tree's root.
  await symlink(join(repositoryRoot, "node_modules"), join(root, "node_modules"));
  // Every file of the tree a little in the past, so that "newer than the bundle" is unambiguous.
  const past = new Date(Date.now() - 60_000);
  for (const file of ["scripts/run-dist.mjs", "scripts/build.ts", "packages/x/src/a.ts"]) {
    await utimes(join(root, file), past, past);
  }
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function launch(env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      [join(root, "scripts/run-dist.mjs"), "app", "--flag"],
      { cwd: root, env: { ...process.env, ...env } },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const builds = async () => (await readFile(join(root, "builds.log"), "utf8").catch(() => "")).split("\n").length - 1;

/** Sets a file's modification time `seconds` from now. */
async function touch(file: string, seconds: number): Promise<void> {
  const when = new Date(Date.now() + seconds * 1000);
  await mkdir(join(root, file, ".."), { recursive: true });
  await writeFile(join(root, file), "export {};\n", { flag: "a" });
  await utimes(join(root, file), when, when);
}

describe("scripts/run-dist.mjs", () => {
  it("builds dist/ when it is missing, says so on stderr, then runs the bundle as `node dist/<name>.js`", async () => {
    const result = await launch();
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(BUILDING);
    expect(JSON.parse(result.stdout)).toEqual([join(root, "dist/app.js"), "--flag"]);
    expect(await builds()).toBe(1);
  });

  it("runs a fresh bundle without building", async () => {
    await launch();
    const builtAt = (await stat(join(root, "dist/app.js"))).mtimeMs;
    const result = await launch();
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(JSON.parse(result.stdout)).toEqual([join(root, "dist/app.js"), "--flag"]);
    expect(await builds()).toBe(1);
    expect((await stat(join(root, "dist/app.js"))).mtimeMs).toBe(builtAt);
  });

  it("rebuilds when a source is newer than the bundle", async () => {
    await launch();
    await touch("packages/x/src/deep/b.ts", 5);
    const result = await launch();
    expect(result).toMatchObject({ code: 0, stderr: BUILDING });
    expect(await builds()).toBe(2);
  });

  it("rebuilds when the console's page is missing (a dist/ built before the console existed)", async () => {
    await launch();
    await rm(join(root, "services/console/dist"), { recursive: true });
    expect(await launch()).toMatchObject({ code: 0, stderr: BUILDING });
    expect(await builds()).toBe(2);
  });

  it("does not rebuild for a newer test file", async () => {
    await launch();
    await touch("packages/x/src/a.test.ts", 5);
    expect(await launch()).toMatchObject({ code: 0, stderr: "" });
    expect(await builds()).toBe(1);
  });

  it("stops with exit code 1 and a one-line hint when the build fails", async () => {
    const result = await launch({ FAIL_BUILD: "1" });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `${BUILDING}The build failed (see above). Fix it, then start again (or run pnpm build alone).\n`,
    );
    expect(result.stdout).toBe("");
  });
});
