import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import {
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "../support/context.ts";
import { runBlock, shellBlocks } from "../support/doc-blocks.ts";
import { startLiveApi } from "../support/live-api.ts";
import { repositoryRoot } from "../support/processes.ts";

// A guide of docs/ whose commands run as it shows them against a listening API: every curl it shows
// is answered, and the test reads what it answered.

/** The guide `docs/<file>`: its ```sh blocks and its ```json blocks (parsed), each in order. */
export function readGuide(file: string) {
  const guide = readFileSync(join(repositoryRoot, "docs", file), "utf8");
  return {
    blocks: shellBlocks(guide),
    jsonBlocks: [...guide.matchAll(/^```json\n([\s\S]*?)^```/gm)].map((match) => JSON.parse(match[1] as string)),
  };
}

export interface GuideApi {
  context: TestContext;
  org: TestOrganization;
  /** What a guide's first block sets: `API`, where the API listens, and `API_KEY`, the organization's key. */
  env: Record<string, string>;
}

/**
 * A listening API with private destinations refused, as in production, and the rate limit out of
 * the way, and an organization; it closes with the context.
 */
export async function startGuideApi(): Promise<GuideApi> {
  const context = await createTestContext({ RATE_LIMIT_PER_MINUTE: "100000", ALLOW_PRIVATE_DESTINATIONS: "false" });
  try {
    const { baseUrl } = await startLiveApi(context);
    const org = await createTestOrganization(context);
    return { context, org, env: { API: baseUrl, API_KEY: org.apiKey } };
  } catch (error) {
    await context.close();
    throw error;
  }
}

/** Runs one block of a guide with `-w` added to each curl, and answers each call's status and body. */
export async function runCalls(
  block: string,
  env: Record<string, string>,
): Promise<{ status: number; body: string }[]> {
  const marked = block.replaceAll("curl -s ", "curl -s -w '\\n@@%{http_code}\\n' ");
  const { code, output } = await runBlock(marked, repositoryRoot, env);
  expect(code, output).toBe(0);
  return [...output.matchAll(/([\s\S]*?)\n?@@(\d{3})\n/g)].map((match) => ({
    status: Number(match[2]),
    body: (match[1] as string).trim(),
  }));
}
