import { parseArgs } from "node:util";
import { escapeUnsafeText } from "@punctual/core";
import { COMMANDS, type Command, type FlagValues } from "./commands.ts";
import { FLAGS, type FlagName } from "./flags.ts";
import { COMMAND_NAMES, commandHelp, commandUsage, helpText } from "./help-text.ts";

/** A wrong command line: `message` is shown as `error: …` on stderr and the CLI exits 2. */
export class UsageError extends Error {}

export type CommandLine =
  | { kind: "help"; text: string }
  | { kind: "run"; name: string; command: Command; values: FlagValues; json: boolean };

const isHelpFlag = (arg: string | undefined) => arg === "--help" || arg === "-h";
const isHelp = (arg: string | undefined) => arg === "help" || isHelpFlag(arg);

/** Every flag takes a value, so `--org --json` is caught below instead of `--org` reading as a switch. */
const PARSE_OPTIONS = {
  ...Object.fromEntries(Object.keys(FLAGS).map((name) => [name, { type: "string" as const }])),
  json: { type: "boolean" as const },
};

/** The operator's own argument inside a message: on one line, nothing a terminal acts on. */
const quoted = (text: string) => `'${escapeUnsafeText(text)}'`;

function commandNamed(name: string): Command {
  const command = COMMANDS[name];
  if (!command) {
    throw new UsageError(
      `Unknown command ${quoted(name)}\nCommands: ${COMMAND_NAMES}\nRun 'pnpm admin help' for their options.`,
    );
  }
  return command;
}

/**
 * Reads `<command> [--flag value | --flag=value]… [--json]`, or a request for help. The messages
 * are written here rather than taken from node's parseArgs, which speaks of "positional arguments"
 * and "ambiguous" values and lets a repeated option silently replace the first.
 */
export function parseCommandLine(argv: string[]): CommandLine {
  const [name, ...rest] = argv;
  if (name === undefined || isHelp(name)) {
    // `help key:list`, `--help key:list`; `help --json` is the general help.
    const topic = name === undefined ? undefined : rest.find((arg) => !arg.startsWith("-"));
    if (topic === undefined) return { kind: "help", text: helpText() };
    return { kind: "help", text: commandHelp(topic, commandNamed(topic)) };
  }
  if (name.startsWith("-")) {
    throw new UsageError(
      `The command comes first: pnpm admin <command> [options] [--json]\nCommands: ${COMMAND_NAMES}`,
    );
  }
  const command = commandNamed(name);
  if (rest.some(isHelpFlag)) return { kind: "help", text: commandHelp(name, command) };
  const wrong = (reason: string) => new UsageError(`${reason}\n${commandUsage(name, command)}`);

  const { tokens } = parseArgs({
    args: rest,
    options: PARSE_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const accepted = new Set<string>(command.flags.map((flag) => flag.name));
  const values: FlagValues = {};
  let json = false;
  for (const token of tokens) {
    if (token.kind === "positional") {
      throw wrong(`Unexpected argument ${quoted(token.value)}: every value follows its option, as below`);
    }
    if (token.kind === "option-terminator") throw wrong("Unexpected argument '--'");
    if (token.name === "json") {
      if (token.value !== undefined) throw wrong("--json takes no value");
      json = true;
      continue;
    }
    if (!accepted.has(token.name)) throw wrong(`Unknown option ${quoted(token.rawName)} for ${name}`);
    const flag = token.name as FlagName;
    // `--key --json` would otherwise take "--json" as the key id.
    if (token.value === undefined || (!token.inlineValue && token.value.startsWith("--"))) {
      throw wrong(`--${flag} needs a value: --${flag} ${FLAGS[flag].value}`);
    }
    if (values[flag] !== undefined) throw wrong(`--${flag} is given more than once`);
    values[flag] = token.value;
  }
  const missing = command.flags.filter((flag) => flag.required && values[flag.name] === undefined);
  if (missing.length > 0) throw wrong(`Missing ${missing.map((flag) => `--${flag.name}`).join(" and ")}`);
  return { kind: "run", name, command, values, json };
}
