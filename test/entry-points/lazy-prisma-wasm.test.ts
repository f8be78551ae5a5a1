import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { build } from "esbuild";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { lazyPrismaWasm } from "../../scripts/lazy-prisma-wasm.ts";
import { repositoryRoot } from "../support/processes.ts";

// The bundles of `pnpm build` leave Prisma's query compiler (a module holding 2.6 MB of base64) out of
// the heap until Prisma decodes it (scripts/lazy-prisma-wasm.ts). Tried on a bundle of its own that
// loads the compiler as the generated client does.

/** What the generated client does with the module (packages/db/src/generated/prisma/internal/class.ts). */
const LOADER = `
export async function compiler() {
  const { wasm } = await import("@prisma/client/runtime/query_compiler_bg.postgresql.wasm-base64.mjs");
  const compiled = new WebAssembly.Module(Buffer.from(wasm, "base64"));
  return WebAssembly.Module.exports(compiled).length;
}
`;

let out: string;
beforeEach(async () => {
  out = await mkdtemp(path.join(tmpdir(), "punctual-lazy-wasm-"));
});
afterEach(async () => {
  await rm(out, { recursive: true, force: true });
});

describe("the bundles' Prisma query compiler", () => {
  it("is a reference to its file in the bundle, read and decoded into a working module when used", async () => {
    const bundle = path.join(out, "bundle.mjs");
    await build({
      stdin: { contents: LOADER, resolveDir: path.join(repositoryRoot, "packages/db"), loader: "js" },
      bundle: true,
      format: "esm",
      platform: "node",
      outfile: bundle,
      logLevel: "silent",
      plugins: [lazyPrismaWasm((file) => pathToFileURL(file).href)],
    });
    // The base64 text stays in its file: the bundle is a few hundred bytes, not 2.6 MB.
    expect((await stat(bundle)).size).toBeLessThan(5_000);
    expect(await readFile(bundle, "utf8")).not.toContain("AGFzbQ");

    // Compiled from what the reference reads: the query compiler's functions are there.
    const { compiler } = (await import(pathToFileURL(bundle).href)) as { compiler(): Promise<number> };
    expect(await compiler()).toBeGreaterThan(10);
  });
});
