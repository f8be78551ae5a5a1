import { parseArgs } from "node:util";
import {
  type AdminDeps,
  AppError,
  addMember,
  createAccount,
  createApiKey,
  createOrganization,
  escapeUnsafeText,
  listApiKeys,
  listOrganizations,
  revokeApiKey,
  rotateApiKey,
  rotateSigningSecret,
  safeJsonStringify,
} from "@punctual/core";

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

type Flags = Record<string, string | boolean | undefined>;

interface Command {
  summary: string;
  usage: string;
  options: Record<string, { type: "string" | "boolean" }>;
  required: string[];
  /** `lines` are the readable output, one entry per line; each is escaped when printed. */
  run(deps: AdminDeps, flags: Flags): Promise<{ json: object; lines: string[] }>;
}

const str = (flags: Flags, name: string) => flags[name] as string;
const optional = (flags: Flags, name: string) => flags[name] as string | undefined;

const COMMANDS: Record<string, Command> = {
  "account:create": {
    summary: "Create an account (a person, by email)",
    usage: "account:create --email E",
    options: { email: { type: "string" } },
    required: ["email"],
    async run(deps, flags) {
      const account = await createAccount(deps, { email: str(flags, "email") });
      return { json: account, lines: [`Created account ${account.id} (${account.email})`] };
    },
  },
  "org:create": {
    summary: "Create an organization; creates the owner's account when missing",
    usage: "org:create --email E --name N [--signing-secret S]",
    options: { email: { type: "string" }, name: { type: "string" }, "signing-secret": { type: "string" } },
    required: ["email", "name"],
    async run(deps, flags) {
      const signingSecret = optional(flags, "signing-secret");
      const created = await createOrganization(deps, {
        email: str(flags, "email"),
        name: str(flags, "name"),
        ...(signingSecret === undefined ? {} : { signingSecret }),
      });
      return {
        json: created,
        lines: [
          `Organization:   ${created.orgId}`,
          `Owner account:  ${created.accountId}`,
          `API key:        ${created.apiKey}`,
          `Signing secret: ${created.signingSecret}`,
          "The API key is shown only now: store it safely.",
        ],
      };
    },
  },
  "org:list": {
    summary: "List organizations (all, or those an email belongs to)",
    usage: "org:list [--email E]",
    options: { email: { type: "string" } },
    required: [],
    async run(deps, flags) {
      const email = optional(flags, "email");
      const organizations = await listOrganizations(deps, email === undefined ? {} : { email });
      const lines = organizations.map(
        (org) =>
          `${org.id}  ${org.name}  owner=${org.ownerEmail}  members=${org.members}  keys=${org.activeApiKeys}  created=${org.createdAt}`,
      );
      return { json: { organizations }, lines: lines.length ? lines : ["No organizations"] };
    },
  },
  "member:add": {
    summary: "Add an account (created when missing) to an organization",
    usage: "member:add --org O --email E",
    options: { org: { type: "string" }, email: { type: "string" } },
    required: ["org", "email"],
    async run(deps, flags) {
      const member = await addMember(deps, { orgId: str(flags, "org"), email: str(flags, "email") });
      return { json: member, lines: [`Added ${member.email} (${member.accountId}) to ${member.orgId}`] };
    },
  },
  "key:create": {
    summary: "Create another API key for an organization",
    usage: "key:create --org O",
    options: { org: { type: "string" } },
    required: ["org"],
    async run(deps, flags) {
      const key = await createApiKey(deps, { orgId: str(flags, "org") });
      return {
        json: key,
        lines: [`API key ${key.keyId}: ${key.apiKey}`, "The API key is shown only now: store it safely."],
      };
    },
  },
  "key:list": {
    summary: "List an organization's API keys (prefixes only)",
    usage: "key:list --org O",
    options: { org: { type: "string" } },
    required: ["org"],
    async run(deps, flags) {
      const keys = await listApiKeys(deps, { orgId: str(flags, "org") });
      const lines = keys.map(
        (key) =>
          `${key.id}  ${key.prefix}…  created=${key.createdAt}  ${key.revokedAt ? `revoked=${key.revokedAt}` : "active"}  last-used=${key.lastUsedAt ?? "never"}`,
      );
      return { json: { keys }, lines };
    },
  },
  "key:revoke": {
    summary: "Revoke an API key; it stops working at once",
    usage: "key:revoke --key K",
    options: { key: { type: "string" } },
    required: ["key"],
    async run(deps, flags) {
      const revoked = await revokeApiKey(deps, { keyId: str(flags, "key") });
      return { json: revoked, lines: [`Revoked ${revoked.keyId} at ${revoked.revokedAt}`] };
    },
  },
  "key:rotate": {
    summary: "Replace an API key by a new one; the old one stops working at once",
    usage: "key:rotate --key K",
    options: { key: { type: "string" } },
    required: ["key"],
    async run(deps, flags) {
      const rotated = await rotateApiKey(deps, { keyId: str(flags, "key") });
      return {
        json: rotated,
        lines: [
          `Revoked ${rotated.revokedKeyId}`,
          `API key ${rotated.keyId}: ${rotated.apiKey}`,
          "The API key is shown only now: store it safely.",
        ],
      };
    },
  },
  "secret:rotate": {
    summary: "Set a new signing secret for an organization (generated unless given)",
    usage: "secret:rotate --org O [--signing-secret S]",
    options: { org: { type: "string" }, "signing-secret": { type: "string" } },
    required: ["org"],
    async run(deps, flags) {
      const signingSecret = optional(flags, "signing-secret");
      const rotated = await rotateSigningSecret(deps, {
        orgId: str(flags, "org"),
        ...(signingSecret === undefined ? {} : { signingSecret }),
      });
      return { json: rotated, lines: [`Signing secret of ${rotated.orgId}: ${rotated.signingSecret}`] };
    },
  },
};

export function helpText(): string {
  const width = Math.max(...Object.values(COMMANDS).map((command) => command.usage.length));
  const lines = Object.values(COMMANDS).map((command) => `  ${command.usage.padEnd(width)}  ${command.summary}`);
  return `Usage: pnpm admin <command> [options] [--json]\n\nCommands:\n${lines.join("\n")}\n`;
}

export class UsageError extends Error {}

/** Parses the command line; throws UsageError with a readable message when it is wrong. */
export function parseCommandLine(argv: string[]): { name: string; command: Command; flags: Flags; json: boolean } {
  const [name, ...rest] = argv;
  if (!name) throw new UsageError("Missing command");
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`Unknown command '${escapeUnsafeText(name)}'`);
  let values: Flags;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: { ...command.options, json: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    // The first line of parseArgs' message quotes the operator's own argument: escaped like output.
    const reason = escapeUnsafeText((error as Error).message.split("\n")[0] ?? "");
    throw new UsageError(`${reason}\nUsage: pnpm admin ${command.usage} [--json]`);
  }
  const missing = command.required.filter((option) => values[option] === undefined);
  if (missing.length > 0) {
    throw new UsageError(
      `Missing ${missing.map((option) => `--${option}`).join(", ")}\nUsage: pnpm admin ${command.usage} [--json]`,
    );
  }
  return { name, command, flags: values, json: values.json === true };
}

/** Runs one admin command; returns the process exit code. */
export async function runCli(argv: string[], deps: () => AdminDeps, io: CliIo): Promise<number> {
  if (argv.length === 0 || argv[0] === "help" || argv[0] === "--help" || argv[0] === "-h") {
    io.stdout(helpText());
    return argv.length === 0 ? 2 : 0;
  }
  let parsed: ReturnType<typeof parseCommandLine>;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr(`error: ${error.message}\n`);
    return 2;
  }
  try {
    const result = await parsed.command.run(deps(), parsed.flags);
    // JSON.stringify leaves DEL, C1 and the Unicode separators and bidi controls raw.
    io.stdout(
      parsed.json ? `${safeJsonStringify(result.json)}\n` : `${result.lines.map(escapeUnsafeText).join("\n")}\n`,
    );
    return 0;
  } catch (error) {
    const message = error instanceof AppError ? error.message : `Unexpected failure: ${(error as Error).message}`;
    // One line, whatever the message holds (a database error can quote stored text).
    io.stderr(`error: ${escapeUnsafeText(message)}\n`);
    return 1;
  }
}
