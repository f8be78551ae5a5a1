import { createRequire } from "node:module";
import path from "node:path";
import type { Plugin } from "esbuild";

// Prisma's query compiler (WebAssembly) ships as a module holding one 2.6 MB base64 string.
// Imported as it is, the module's source text and the string both stay in the heap for the life of
// the process: 5.2 MB of an idle worker's 36 MB of heap (heap snapshot). In the bundles of
// `pnpm build` it is replaced by a module whose `wasm` reads that same file only when Prisma decodes
// it (the generated client's `Buffer.from(wasm, "base64")` takes an object's `valueOf()`), so the
// text is garbage once the WebAssembly is compiled.

/** The generated client's dynamic import of the query compiler, for any database provider. */
const WASM_BASE64_MODULE = /query_compiler_bg\.\w+\.wasm-base64\.mjs$/;

/**
 * The esbuild plugin. `fromBundle` turns the base64 module's path into one relative to the bundle
 * (`new URL(…, import.meta.url)` finds it at run time).
 */
export function lazyPrismaWasm(fromBundle: (file: string) => string): Plugin {
  return {
    name: "lazy-prisma-wasm",
    setup(pluginBuild) {
      // Found as Node finds it from the importing file's folder (the generated client's), whatever
      // other plugins would make of the specifier.
      pluginBuild.onResolve({ filter: WASM_BASE64_MODULE }, (args) => ({
        path: createRequire(path.join(args.resolveDir, "importer.js")).resolve(args.path),
        namespace: "lazy-prisma-wasm",
      }));
      pluginBuild.onLoad({ filter: /.*/, namespace: "lazy-prisma-wasm" }, (args) => ({
        // The file is `const wasm = "<base64>";` and its export: the text between the quotes.
        contents: `import { readFileSync } from "node:fs";
export const wasm = {
  valueOf() {
    const text = readFileSync(new URL(${JSON.stringify(fromBundle(args.path))}, import.meta.url), "latin1");
    return text.slice(text.indexOf('"') + 1, text.lastIndexOf('"'));
  },
};
`,
        loader: "js",
      }));
    },
  };
}
