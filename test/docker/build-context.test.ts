import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import dockerignore from "@balena/dockerignore";
import { build } from "esbuild";
import { beforeAll, describe, expect, it } from "vitest";
import { buildConsole, bundleOptions, consoleRoot, root } from "../../scripts/bundles.ts";

// The image is built from the build context: this checkout with .dockerignore applied. A pattern
// there that drops a source (as `**/admin-token.*` once dropped services/api/src/admin-token.ts)
// breaks `docker compose up --build` only when an image is built, which no other test does. This
// computes the context with Docker's own matching rules (@balena/dockerignore, a port of moby's)
// and checks that it holds every file the Dockerfile copies, the image's `pnpm build` reads (the
// esbuild and Vite inputs) and the image's commands run (migrations, admin CLI).

/** Made inside the image by its own commands, so left out of the context on purpose. */
const MADE_IN_THE_IMAGE = [
  // `pnpm install` (the root postinstall's `prisma generate`) writes the client there.
  "packages/db/src/generated/",
];

/** The package.json scripts the image runs: its build and install, compose's migrate service, the admin CLI. */
const IMAGE_SCRIPTS = ["postinstall", "build", "db:migrate", "admin"];

/** The package is CommonJS with its function on `exports.default`. */
const ignore = dockerignore.default;

function dockerignoreRules(): string[] {
  return readFileSync(path.join(root, ".dockerignore"), "utf8").split("\n");
}

/** Every file of the checkout that a `docker build .` sends, as paths relative to the root. */
function buildContext(rules: string[]): Set<string> {
  const matcher = ignore().add(rules);
  // A folder left out is not walked; that is only right while no `!` rule can take a file back.
  const reincludes = rules.some((rule) => rule.trim().startsWith("!"));
  const files = new Set<string>();
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const file = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!reincludes && matcher.ignores(file)) continue;
        walk(file);
      } else if (!matcher.ignores(file)) {
        files.add(file);
      }
    }
  };
  walk("");
  return files;
}

/** The sources that the Dockerfile's COPY instructions name (not those copied from another stage). */
function dockerfileCopies(): string[] {
  const sources: string[] = [];
  for (const line of readFileSync(path.join(root, "Dockerfile"), "utf8").split("\n")) {
    const words = line.trim().split(/\s+/);
    if (words[0] !== "COPY" || words.some((word) => word.startsWith("--from"))) continue;
    sources.push(...words.slice(1, -1).filter((word) => !word.startsWith("--") && word !== "."));
  }
  return sources;
}

/** The workspace's files that the esbuild bundles are made from. */
async function bundleInputs(): Promise<string[]> {
  const result = await build({ ...bundleOptions, write: false, metafile: true, logLevel: "silent" });
  // Inputs of a plugin's namespace are named `namespace:path`; the files on disk have none.
  return Object.keys(result.metafile.inputs).filter((input) => !/^[\w-]+:/.test(input));
}

/** The workspace's files that `pnpm build` runs under tsx (scripts/build.ts and its imports). */
async function buildScriptInputs(): Promise<string[]> {
  const result = await build({
    absWorkingDir: root,
    entryPoints: ["scripts/build.ts"],
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    write: false,
    metafile: true,
    logLevel: "silent",
  });
  return Object.keys(result.metafile.inputs);
}

interface ViteOutput {
  output: Array<{ type: "chunk"; moduleIds: string[] } | { type: "asset"; originalFileNames: string[] }>;
}

/** The workspace's files that the console's Vite build reads (its modules, its page, its config). */
async function consoleInputs(): Promise<string[]> {
  const result = (await buildConsole({ write: false, logLevel: "silent" })) as ViteOutput | ViteOutput[];
  const files = ["services/console/vite.config.ts", "services/console/package.json"];
  for (const output of Array.isArray(result) ? result : [result]) {
    for (const item of output.output) {
      const names = item.type === "chunk" ? item.moduleIds : item.originalFileNames;
      for (const name of names) {
        // Virtual modules start with \0; an asset may be named relative to the console's root.
        if (name.startsWith("\0")) continue;
        files.push(path.relative(root, path.resolve(consoleRoot, name)).split(path.sep).join("/"));
      }
    }
  }
  return files;
}

/** The files that the image's package.json scripts name (`node --import tsx scripts/migrate.ts`, …). */
function scriptFiles(): string[] {
  const scripts = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")).scripts as Record<string, string>;
  return IMAGE_SCRIPTS.flatMap((name) => {
    const command = scripts[name];
    if (command === undefined) throw new Error(`package.json has no script '${name}'`);
    return command.split(/\s+/).filter((word) => /\.(ts|mjs|js)$/.test(word));
  });
}

/** Tracked files under `folder`, as the image's commands may read any of them (migrations). */
function filesUnder(folder: string): string[] {
  const files: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(path.join(root, relative), { withFileTypes: true })) {
      const file = `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(file);
      else files.push(file);
    }
  };
  walk(folder);
  return files;
}

/** The files the image needs that `context` lacks. */
function missingFrom(context: Set<string>, needed: string[]): string[] {
  const inContext = (file: string) =>
    context.has(file) || [...context].some((entry) => entry.startsWith(`${file.replace(/\/$/, "")}/`));
  const missing = needed
    .filter((file) => !file.split("/").includes("node_modules"))
    .filter((file) => !MADE_IN_THE_IMAGE.some((prefix) => file.startsWith(prefix)))
    .filter((file) => !inContext(file));
  return [...new Set(missing)].sort();
}

describe("the image's build context", () => {
  let needed: string[] = [];

  beforeAll(async () => {
    needed = [
      ...dockerfileCopies(),
      ...scriptFiles(),
      ...filesUnder("prisma"),
      ...(await bundleInputs()),
      ...(await buildScriptInputs()),
      ...(await consoleInputs()),
    ];
  }, 60_000);

  it("holds every file the Dockerfile copies, the image's build reads and its commands run", () => {
    // Sanity of the list itself: the sources that once went missing are among what is needed.
    expect(needed).toContain("services/api/src/admin-token.ts");
    expect(needed).toContain("scripts/migrate.ts");
    expect(needed).toContain("services/console/src/main.tsx");
    expect(missingFrom(buildContext(dockerignoreRules()), needed)).toEqual([]);
  });

  it("finds a source that a pattern of .dockerignore drops", () => {
    const context = buildContext([...dockerignoreRules(), "**/admin-token.*", "scripts/lazy-*"]);
    expect(missingFrom(context, needed)).toEqual(["scripts/lazy-prisma-wasm.ts", "services/api/src/admin-token.ts"]);
  });

  it("leaves out local settings, secrets and installed or built files", () => {
    const context = [...buildContext(dockerignoreRules())];
    const leaked = context.filter(
      (file) =>
        /(^|\/)(node_modules|dist|\.git|\.punctual)\//.test(file) ||
        /(^|\/)\.env(\.|$)/.test(file) ||
        file.startsWith("packages/db/src/generated/"),
    );
    expect(leaked).toEqual([]);
  });

  it("copies every workspace package's manifest before the install", () => {
    const copied = new Set(dockerfileCopies());
    const manifests = ["packages", "services"].flatMap((folder) =>
      readdirSync(path.join(root, folder), { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => `${folder}/${entry.name}/package.json`),
    );
    expect(manifests.filter((manifest) => !copied.has(manifest))).toEqual([]);
  });
});
