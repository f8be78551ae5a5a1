// `pnpm build`: the bundles of each process into dist/ and the web console into
// services/console/dist, as scripts/bundles.ts describes them.
import { rm } from "node:fs/promises";
import { build } from "esbuild";
import { buildConsole, bundleOptions, outdir } from "./bundles.ts";

await rm(outdir, { recursive: true, force: true });
const result = await build({ ...bundleOptions, metafile: true });
for (const [file, output] of Object.entries(result.metafile.outputs)) {
  if (!file.endsWith(".js")) continue;
  process.stdout.write(`${file}  ${(output.bytes / 1024).toFixed(0)} KiB\n`);
}

await buildConsole({ write: true, logLevel: "warn" });
process.stdout.write("services/console/dist  (the console, served at /console)\n");
