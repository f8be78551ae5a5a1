import {
  type AdminDeps,
  API_KEY_NOT_FOUND,
  AppError,
  escapeUnsafeText,
  ORGANIZATION_NOT_FOUND,
  safeJsonStringify,
} from "@punctual/core";
import { parseCommandLine, UsageError } from "./command-line.ts";
import type { Command, FlagValues } from "./commands.ts";
import { failureMessage } from "./failure-message.ts";
import { FLAGS, type FlagName } from "./flags.ts";
import { misplacedId } from "./misplaced-id.ts";

export { helpText } from "./help-text.ts";

// `pnpm admin <command>`: the operations of contract §2 for operators. With --json a command
// prints exactly one JSON object on stdout; otherwise readable lines. Errors go to stderr with a
// non-zero exit: 2 for a wrong command line, 1 when the operation was refused or failed.
// Nothing reaches the terminal raw that it would act on (escape sequences, line breaks inside a
// value, bidi overrides): every line and value printed goes through escapeUnsafeText, so a name
// stored before names were validated cannot forge output or take over the terminal.

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** A value refused before any operation ran: exit 1, like a refusal by the operation itself. */
class Refusal extends Error {}

/**
 * Core's messages are the admin HTTP API's, which name input fields (`'keyId' must be …`) and
 * say "Unable to find …" without the id, which the URL holds. A person at a terminal is told the
 * flag they typed and the id that was not found.
 */
function forTerminal(error: AppError, command: Command, values: FlagValues): string {
  if (error.message === API_KEY_NOT_FOUND && values.key !== undefined) {
    return `No such API key: ${values.key} (key:list --org ORG_ID lists an organization's keys)`;
  }
  if (error.message === ORGANIZATION_NOT_FOUND && values.org !== undefined) {
    return `No such organization: ${values.org} (org:list lists the organizations)`;
  }
  const field = /^'([A-Za-z]+)'/.exec(error.message)?.[1];
  const flag = command.flags.find((candidate) => FLAGS[candidate.name].field === field);
  return flag ? `--${flag.name}${error.message.slice(`'${field}'`.length)}` : error.message;
}

function checkIds(values: FlagValues): void {
  for (const [flag, value] of Object.entries(values) as [FlagName, string][]) {
    const mistake = misplacedId(flag, value);
    if (mistake) throw new Refusal(mistake);
  }
}

/** Runs one admin command; returns the process exit code. */
export async function runCli(argv: string[], deps: () => AdminDeps, io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
  if (parsed.kind === "help") {
    io.stdout(parsed.text);
    // `pnpm admin` alone is a command line without a command; asking for help is not an error.
    return argv.length === 0 ? 2 : 0;
  }
  const { command, values, json } = parsed;
  try {
    checkIds(values);
    const result = await command.run(deps(), values);
    // JSON.stringify leaves DEL, C1 and the Unicode separators and bidi controls raw.
    io.stdout(json ? `${safeJsonStringify(result.json)}\n` : `${result.lines.map(escapeUnsafeText).join("\n")}\n`);
    return 0;
  } catch (error) {
    const message =
      error instanceof Refusal
        ? error.message
        : error instanceof AppError
          ? forTerminal(error, command, values)
          : failureMessage(error);
    // One line, whatever the message holds (a database error can quote stored text).
    io.stderr(`error: ${escapeUnsafeText(message)}\n`);
    return 1;
  }
}
