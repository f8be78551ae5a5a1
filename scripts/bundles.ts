// What `pnpm build` (scripts/build.ts) builds: each process's entry point bundled into one plain
// JavaScript file in dist/, so production runs `node dist/<name>.js` without the tsx loader (its
// hooks thread alone costs ~35 MB of resident memory per process) and without compiling TypeScript
// at every start; and the web console. Its own module so that test/docker/build-context.test.ts
// can list the inputs of the same builds.
//
// The workspace's own code (packages/*, services/*) is bundled; every package from node_modules
// stays external and is loaded by Node at run time as under tsx, so native addons, dynamic
// imports and files a package reads next to itself keep working.
import { readFile } from "node:fs/promises";
import { builtinModules, createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { BuildOptions, Plugin } from "esbuild";
import { lazyPrismaWasm } from "./lazy-prisma-wasm.ts";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const outdir = path.join(root, "dist");

/** dist/<key>.js from each source entry point. */
export const ENTRY_POINTS = {
  api: "services/api/src/main.ts",
  worker: "services/worker/src/main.ts",
  "start-all": "scripts/start-all.ts",
  migrate: "scripts/migrate.ts",
  admin: "services/admin/src/main.ts",
};

const BUILTINS = new Set(builtinModules);
const RESOLVING = Symbol("resolving");

/** A path from dist/ usable as an import specifier. */
function fromOutdir(file: string): string {
  const relative = path.relative(outdir, file).split(path.sep).join("/");
  return relative.startsWith(".") ? relative : `./${relative}`;
}

/**
 * Keeps node_modules packages out of the bundle. esbuild's own `packages: "external"` would leave
 * the bare names (`import "cron-parser"`), which Node then looks up from dist/, i.e. in the root's
 * node_modules only; pnpm gives each workspace package its own node_modules, so most of them are
 * not there. Instead each import is resolved from the file that makes it, as Node would, and
 * points at that exact file (under node_modules/.pnpm). A workspace package resolves outside
 * node_modules and is bundled.
 */
const externalNodeModules: Plugin = {
  name: "external-node-modules",
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === RESOLVING) return undefined;
      if (args.path.startsWith("node:") || BUILTINS.has(args.path)) return { path: args.path, external: true };
      const resolved = await pluginBuild.resolve(args.path, {
        kind: args.kind,
        importer: args.importer,
        resolveDir: args.resolveDir,
        pluginData: RESOLVING,
      });
      if (resolved.errors.length > 0) return { errors: resolved.errors };
      if (!resolved.path.split(path.sep).includes("node_modules")) return resolved;
      return { path: fromOutdir(resolved.path), external: true };
    });
  },
};

/**
 * Some sources find files next to themselves through `import.meta.url` (the Prisma client's
 * `__dirname`, the API reference's script resolved from services/api). In a bundle that would be
 * dist/; this keeps it the source file's own URL (the sources ship beside dist/).
 */
const sourceRelativeUrls: Plugin = {
  name: "source-relative-import-meta-url",
  setup(pluginBuild) {
    pluginBuild.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.split(path.sep).includes("node_modules")) return undefined;
      const source = await readFile(args.path, "utf8");
      if (!source.includes("import.meta.url")) return undefined;
      const own = `new URL(${JSON.stringify(fromOutdir(args.path))}, import.meta.url).href`;
      return { contents: source.replaceAll("import.meta.url", own), loader: "ts" };
    });
  },
};

/** The bundles' esbuild options (`metafile` left to the caller). */
export const bundleOptions: BuildOptions = {
  absWorkingDir: root,
  entryPoints: ENTRY_POINTS,
  outdir,
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  // Resolve as Node does: no bundler-only "module" condition or "module" main field.
  conditions: [],
  mainFields: ["main"],
  // Unminified, names kept: error and class names in logs stay the source's.
  keepNames: true,
  // Maps for `node --enable-source-maps` when a stack trace must point at the TypeScript.
  sourcemap: "linked",
  logLevel: "warning",
  plugins: [lazyPrismaWasm(fromOutdir), externalNodeModules, sourceRelativeUrls],
};

/** The web console (services/console), which the API serves at /console. */
export const consoleRoot = path.join(root, "services/console");

// The root's own types do not see Vite's (it is not a root dependency): the one call used here.
interface ViteBuild {
  build(config: { root: string; logLevel: "warn" | "silent"; build?: { write: false } }): Promise<unknown>;
}

/**
 * A Vite build of the console into services/console/dist; with `write: false`, its output in
 * memory (Rolldown's chunks and assets, which name their source modules). Vite is the console
 * package's own dependency, so it is resolved from there.
 */
export async function buildConsole(options: { write: boolean; logLevel: "warn" | "silent" }): Promise<unknown> {
  const fromConsole = createRequire(path.join(consoleRoot, "package.json"));
  const vite = (await import(pathToFileURL(fromConsole.resolve("vite")).href)) as ViteBuild;
  return vite.build({
    root: consoleRoot,
    logLevel: options.logLevel,
    ...(options.write ? {} : { build: { write: false } }),
  });
}
