import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repositoryRoot } from "../support/processes.ts";

// @punctual/client is private to the workspace for now, but packed as `pnpm publish` would pack
// it, it must work outside: its build (prepack), the exports publishConfig swaps in, the JavaScript
// under plain Node and the type declarations under the workspace's TypeScript, as a consumer
// installing the tarball would use them.

const run = promisify(execFile);
const packageDir = join(repositoryRoot, "packages/client");

let work: string;
let installed: string;
let manifest: { exports: Record<string, { types: string; default: string } | string>; types: string };

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "punctual-client-pack-"));
  await run("pnpm", ["pack", "--pack-destination", work], { cwd: packageDir });
  const consumer = join(work, "consumer");
  mkdirSync(join(consumer, "node_modules/@punctual"), { recursive: true });
  mkdirSync(join(consumer, "node_modules/@types"), { recursive: true });
  const { version } = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
  await run("tar", ["xzf", join(work, `punctual-client-${version}.tgz`), "-C", work]);
  installed = join(consumer, "node_modules/@punctual/client");
  renameSync(join(work, "package"), installed);
  // The package's dependencies as an install would put them beside it.
  for (const dependency of ["openapi-fetch", "standardwebhooks"]) {
    symlinkSync(join(packageDir, "node_modules", dependency), join(consumer, "node_modules", dependency));
  }
  symlinkSync(join(repositoryRoot, "node_modules/@types/node"), join(consumer, "node_modules/@types/node"));
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ type: "module" }));
  manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
}, 180_000);
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed @punctual/client", () => {
  it("exports built JavaScript and declarations for both entry points, each file in the tarball", () => {
    expect(manifest.exports).toEqual({
      ".": { types: "./dist/index.d.ts", default: "./dist/index.js" },
      "./webhooks": { types: "./dist/webhooks.d.ts", default: "./dist/webhooks.js" },
      "./package.json": "./package.json",
    });
    expect(manifest.types).toBe("./dist/index.d.ts");
    for (const file of ["dist/index.js", "dist/index.d.ts", "dist/webhooks.js", "dist/webhooks.d.ts", "README.md"]) {
      expect(() => readFileSync(join(installed, file)), file).not.toThrow();
    }
  });

  it("loads under plain Node, without a TypeScript loader", async () => {
    const script =
      'const client = await import("@punctual/client"); const hooks = await import("@punctual/client/webhooks");' +
      "console.log(JSON.stringify([Object.keys(client).sort(), Object.keys(hooks).sort()]));";
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
      cwd: join(work, "consumer"),
      env: { PATH: process.env.PATH ?? "" },
    });
    expect(JSON.parse(stdout)).toEqual([
      ["PunctualError", "createPunctualAdminClient", "createPunctualClient"],
      ["TOLERANCE_SECONDS", "WebhookVerificationError", "WebhookVerifier", "verifyWebhook"],
    ]);
  });

  it("type-checks a consumer's code, and every TypeScript example of its README, against its declarations", async () => {
    const consumer = join(work, "consumer");
    writeFileSync(
      join(consumer, "index.ts"),
      `import { createPunctualClient, type Event, PunctualError } from "@punctual/client";
import { type VerifiedDelivery, WebhookVerifier } from "@punctual/client/webhooks";

const client = createPunctualClient({ baseUrl: "http://localhost:3000", apiKey: "pk_example" });
export const created: Promise<Event> = client.events.create({
  payload: "{}",
  destination: "https://example.com/hook",
  scheduledTime: new Date(),
});
// @ts-expect-error the API has no such field: the declarations are typed, not any
client.events.create({ payload: "{}", destination: "https://example.com/hook", scheduledTime: new Date(), extra: 1 });
export const notFound = (error: unknown) => error instanceof PunctualError && error.status === 404;
export const verified = (body: string, headers: Headers): VerifiedDelivery =>
  new WebhookVerifier({ secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }).verify(body, headers);
`,
    );
    writeFileSync(join(consumer, "readme.ts"), readmeExamples(readFileSync(join(installed, "README.md"), "utf8")));
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2023",
          strict: true,
          noEmit: true,
          types: ["node"],
        },
        files: ["index.ts", "readme.ts"],
      }),
    );
    const tsc = join(repositoryRoot, "node_modules/typescript/bin/tsc");
    const result = await run(process.execPath, [tsc, "-p", consumer]).catch((error: { stdout: string }) => error);
    expect(result.stdout).toBe("");
  });
});

/**
 * The README's \`\`\`ts blocks as one module: their imports first, then each block in a scope of its
 * own (they reuse names), beside the names the prose gives them (a client, a base URL, a key).
 */
function readmeExamples(readme: string): string {
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1] ?? "");
  expect(blocks.length).toBeGreaterThan(5);
  const lines = blocks.map((block) => block.split("\n"));
  const imports = lines.flatMap((block) => block.filter((line) => line.startsWith("import ")));
  const bodies = lines.map((block) => block.filter((line) => !line.startsWith("import ")).join("\n"));
  return [
    'import type { PunctualClient } from "@punctual/client";',
    ...imports,
    "declare const punctual: PunctualClient;",
    "declare const baseUrl: string;",
    "declare const apiKey: string;",
    ...bodies.map((body) => `{\n${body}\n}`),
    "export {};",
  ].join("\n");
}
