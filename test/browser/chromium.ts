import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";

// Debian's Chromium driven by playwright-core, which downloads no browser of its own. Outside CI a
// missing browser skips the browser tests with a message; in CI (where .ci/run installs it) it fails them.

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const LAUNCH_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** CI as CI systems set it (CI=true, or 1); unset, empty, 0 or false is a developer's machine. */
const inCi = !["", "0", "false"].includes((process.env.CI ?? "").trim().toLowerCase());
const hasChromium = existsSync(CHROMIUM);
const skipReason = `${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run the browser check`;

/** Whether a browser test file is skipped (no Chromium outside CI); says so once, naming the file's check. */
export function skipBrowserCheck(check: string): boolean {
  const skip = !hasChromium && !inCi;
  if (skip) console.warn(`${check} skipped: ${skipReason}`);
  return skip;
}

/** Starts headless Chromium; in CI without it, fails with what to install. */
export async function launchChromium(): Promise<Browser> {
  if (!hasChromium) throw new Error(`CI=${process.env.CI} but ${skipReason}`);
  return chromium.launch({ executablePath: CHROMIUM, args: LAUNCH_ARGS, headless: true });
}
