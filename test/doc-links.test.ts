import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// The documentation stands alone: a clone of the repository has nothing beside it, so every link
// of the README and of docs/ must name a file of the repository (and a heading of it, when it has
// an anchor). Links to the web are left alone.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

function markdownFiles(): string[] {
  const docs = readdirSync(path.join(root, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => path.join("docs", name));
  return ["README.md", ...docs, "bench/RESULTS.md"];
}

/** Links written `[text](target)` or `![alt](target)`, outside code blocks and inline code. */
function links(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => match[1] as string);
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{Letter}\p{Number}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

function anchors(file: string): Set<string> {
  const text = readFileSync(file, "utf8").replace(/```[\s\S]*?```/g, "");
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const match of text.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = slug(match[1] as string);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    result.add(count === 0 ? base : `${base}-${count}`);
  }
  return result;
}

const isExternal = (target: string) => /^(https?:|mailto:)/.test(target);

describe("documentation links", () => {
  it("finds the links it checks (the README links to the docs)", () => {
    expect(links(readFileSync(path.join(root, "README.md"), "utf8"))).toEqual(
      expect.arrayContaining(["docs/api.md", "docs/receiving.md", "docs/configuration.md"]),
    );
  });

  for (const file of markdownFiles()) {
    it(`every link of ${file} resolves inside the repository`, () => {
      const broken: string[] = [];
      for (const target of links(readFileSync(path.join(root, file), "utf8"))) {
        if (isExternal(target)) continue;
        const [relative = "", anchor] = target.split("#");
        const resolved = relative === "" ? path.join(root, file) : path.resolve(root, path.dirname(file), relative);
        if (!resolved.startsWith(`${root}${path.sep}`) || !existsSync(resolved)) {
          broken.push(`${target} (no such file in the repository)`);
          continue;
        }
        if (anchor && statSync(resolved).isFile() && resolved.endsWith(".md") && !anchors(resolved).has(anchor)) {
          broken.push(`${target} (no heading #${anchor})`);
        }
      }
      expect(broken).toEqual([]);
    });
  }
});
