import { COMMANDS, type Command } from "./commands.ts";
import { FLAGS, type FlagName, JSON_FLAG_DESCRIPTION } from "./flags.ts";

// Every text that tells the operator how to call the CLI: `pnpm admin help`, `<command> --help`
// and the usage shown under a wrong command line. All of it comes from COMMANDS and FLAGS, so a
// flag is described the same way everywhere.

const flagWithValue = (name: FlagName) => `--${name} ${FLAGS[name].value}`;

/** `org:create --email EMAIL --name NAME [--signing-secret SECRET]` */
export function commandSynopsis(name: string, command: Command): string {
  const flags = command.flags.map((flag) =>
    flag.required ? flagWithValue(flag.name) : `[${flagWithValue(flag.name)}]`,
  );
  return [name, ...flags].join(" ");
}

function describedLines(rows: [string, string][]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length));
  return rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`);
}

function flagRows(command: Command): [string, string][] {
  return command.flags.map((flag) => [flagWithValue(flag.name), flag.description ?? FLAGS[flag.name].description]);
}

/** The usage line and the command's options: shown under an error about its command line. */
export function commandUsage(name: string, command: Command): string {
  return [`Usage: pnpm admin ${commandSynopsis(name, command)} [--json]`, ...describedLines(flagRows(command))].join(
    "\n",
  );
}

/** `pnpm admin <command> --help` */
export function commandHelp(name: string, command: Command): string {
  return [
    `Usage: pnpm admin ${commandSynopsis(name, command)} [--json]`,
    "",
    command.summary,
    "",
    "Options:",
    ...describedLines([...flagRows(command), ["--json", JSON_FLAG_DESCRIPTION]]),
    "",
  ].join("\n");
}

export const COMMAND_NAMES = Object.keys(COMMANDS).join(", ");

/** `pnpm admin help` */
export function helpText(): string {
  const commands = Object.entries(COMMANDS).flatMap(([name, command]) => [
    `  ${commandSynopsis(name, command)}`,
    `      ${command.summary}`,
  ]);
  const options = describedLines([
    ...(Object.keys(FLAGS) as FlagName[]).map((name): [string, string] => [
      flagWithValue(name),
      FLAGS[name].description,
    ]),
    ["--json", JSON_FLAG_DESCRIPTION],
  ]);
  return [
    "Usage: pnpm admin <command> [options] [--json]",
    "",
    "Commands:",
    ...commands,
    "",
    "Options:",
    ...options,
    "",
    "pnpm admin <command> --help shows one command. Errors go to stderr, with exit code 2 for a wrong",
    "command line and 1 when the operation was refused or failed.",
    "",
  ].join("\n");
}
