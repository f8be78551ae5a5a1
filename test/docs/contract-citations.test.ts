import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

// Comments, the API reference and the docs cite the service contract by section ("contract §7",
// "(§3)"). The contract is docs/contract.md: every section cited anywhere must be one of its
// headings, so a reader can open what a comment points at.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CONTRACT = "docs/contract.md";
const FOLDERS = ["packages", "services", "scripts", "test", "bench", "docs"];
const SKIPPED = new Set(["node_modules", "dist", "generated"]);

function sourceFiles(folder: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(path.join(root, folder), { withFileTypes: true })) {
    const file = `${folder}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!SKIPPED.has(entry.name)) files.push(...sourceFiles(file));
    } else if (/\.(ts|tsx|mjs|md)$/.test(entry.name) && file !== CONTRACT) {
      files.push(file);
    }
  }
  return files;
}

/** "3", "10.2": the numbers of the contract's numbered headings. */
function contractSections(): Set<string> {
  const text = readFileSync(path.join(root, CONTRACT), "utf8");
  return new Set([...text.matchAll(/^#{2,3} (\d+(?:\.\d+)?)\.? /gm)].map((match) => match[1] as string));
}

/**
 * Each `§N` of a file, as "file: §N", leaving out other documents' sections ("RFC 4291 §2.4"). A
 * section of a document the repository does not hold (a "console contract") is kept whole, so
 * that it names no heading.
 */
function citations(file: string): string[] {
  const text = readFileSync(path.join(root, file), "utf8");
  return [...text.matchAll(/(RFC \d+ |console contract )?§(\d+(?:\.\d+)?)/gi)]
    .filter((match) => !match[1]?.startsWith("RFC"))
    .map((match) => `${file}: ${match[1] ?? ""}§${(match[2] as string).replace(/\.$/, "")}`);
}

describe("contract citations", () => {
  it("name sections that docs/contract.md has", () => {
    const sections = contractSections();
    expect([...sections]).toEqual(expect.arrayContaining(["1", "3", "9", "10.1"]));
    const all = FOLDERS.flatMap(sourceFiles).flatMap(citations);
    expect(all.length).toBeGreaterThan(50);
    const unresolved = all.filter((citation) => {
      const [place, section] = citation.split("§") as [string, string];
      return /console contract $/i.test(place) || !sections.has(section);
    });
    expect(unresolved).toEqual([]);
  });
});
