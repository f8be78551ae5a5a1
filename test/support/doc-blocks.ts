import { type ServiceProcess, spawnProcess } from "./processes.ts";

// The shell blocks of a guide, run as the guide shows them: what the documentation tells an operator
// to type is what the test runs.

/**
 * The text of `### subsection` inside `## section` of a markdown document, up to the next heading of
 * either level.
 */
export function subsection(markdown: string, section: string, sub: string): string {
  const start = markdown.indexOf(`\n## ${section}\n`);
  if (start < 0) throw new Error(`no section "## ${section}"`);
  const sectionEnd = markdown.indexOf("\n## ", start + 1);
  const body = markdown.slice(start, sectionEnd < 0 ? undefined : sectionEnd);
  const subStart = body.indexOf(`\n### ${sub}\n`);
  if (subStart < 0) throw new Error(`no subsection "### ${sub}" in "## ${section}"`);
  const subEnd = body.indexOf("\n### ", subStart + 1);
  return body.slice(subStart, subEnd < 0 ? undefined : subEnd);
}

/** The ```sh blocks of a piece of markdown, in order, unindented (a block may sit in a list item). */
export function shellBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^( *)```sh\n([\s\S]*?)^\1```/gm)].map((match) => {
    const indent = (match[1] as string).length;
    return (match[2] as string)
      .split("\n")
      .map((line) => line.slice(Math.min(indent, line.length - line.trimStart().length)))
      .join("\n");
  });
}

export interface BlockRun {
  code: number | null;
  /** stdout and stderr together. */
  output: string;
}

/**
 * Runs one block in bash with `set -euo pipefail`, with only the given environment (and PATH, HOME,
 * LANG): no setting of the test's own process leaks into it.
 */
export async function runBlock(script: string, cwd: string, env: Record<string, string>): Promise<BlockRun> {
  const keep = ["PATH", "HOME", "LANG", "TMPDIR"];
  const base = Object.fromEntries(
    keep.filter((name) => process.env[name] !== undefined).map((n) => [n, process.env[n]]),
  );
  const shell: ServiceProcess = spawnProcess("bash", ["-euo", "pipefail", "-c", script], {
    cwd,
    env: { ...base, ...env },
  });
  // "close", not "exit": the output is all read by then. Listened to before the process can end.
  const code = await new Promise<number | null>((resolve) =>
    shell.child.once("close", (exitCode) => resolve(exitCode)),
  );
  return { code, output: shell.output() };
}
