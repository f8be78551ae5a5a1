import { describe, expect, it } from "vitest";
import { runCliCapturing } from "./run-cli.ts";

// What an operator reads before any operation runs: the help, each command's usage, and the
// errors about a command line (exit 2). None of these may touch the database.

async function cli(...argv: string[]) {
  return runCliCapturing(argv, () => {
    throw new Error("the database was asked for");
  });
}

const KEY_OPTION = "  --key KEY_ID  the key's id, key_…, from org:create or key:list (not the API key pk_… itself)";
const KEY_USAGE = (command: string) => `Usage: pnpm admin ${command} --key KEY_ID [--json]\n${KEY_OPTION}\n`;
const COMMAND_LIST =
  "Commands: account:create, org:create, org:list, member:add, key:create, key:list, key:revoke, key:rotate, secret:rotate, secret:end-overlap";

describe("pnpm admin help", () => {
  it("help, --help and -h print every command with its options on stdout and exit 0", async () => {
    const help = await cli("help");
    expect(help.code).toBe(0);
    expect(help.stderr).toBe("");
    for (const synopsis of [
      "account:create --email EMAIL",
      "org:create --email EMAIL --name NAME [--signing-secret SECRET]",
      "org:list [--email EMAIL]",
      "member:add --org ORG_ID --email EMAIL",
      "key:create --org ORG_ID",
      "key:list --org ORG_ID",
      "key:revoke --key KEY_ID",
      "key:rotate --key KEY_ID",
      "secret:rotate --org ORG_ID [--signing-secret SECRET]",
      "secret:end-overlap --org ORG_ID",
    ]) {
      expect(help.stdout).toContain(`\n  ${synopsis}\n`);
    }
    expect(help.stdout).toContain(
      [
        "Options:",
        "  --email EMAIL            an email address",
        "  --name NAME              the organization's name, 1 to 200 characters",
        "  --org ORG_ID             the organization's id, org_…, from org:create or org:list",
        "  --key KEY_ID             the key's id, key_…, from org:create or key:list (not the API key pk_… itself)",
        "  --signing-secret SECRET  whsec_ followed by padded base64 of at least 24 bytes, or any text of 24 to 256 characters; generated when left out",
        "  --json                   print exactly one JSON object on stdout instead of readable lines",
      ].join("\n"),
    );
    expect(await cli("--help")).toEqual(help);
    expect(await cli("-h")).toEqual(help);
    expect(await cli("help", "--json")).toEqual(help);
  });

  it("pnpm admin alone prints the help and exits 2", async () => {
    const bare = await cli();
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe((await cli("help")).stdout);
  });

  it("<command> --help and help <command> print that command's usage and options and exit 0", async () => {
    const expected =
      "Usage: pnpm admin key:rotate --key KEY_ID [--json]\n\n" +
      "Replace an API key by a new one; the old one stops working at once\n\n" +
      "Options:\n" +
      `${KEY_OPTION}\n` +
      "  --json        print exactly one JSON object on stdout instead of readable lines\n";
    expect(await cli("key:rotate", "--help")).toEqual({ code: 0, stdout: expected, stderr: "" });
    expect(await cli("key:rotate", "--key", "key_x", "-h")).toEqual({ code: 0, stdout: expected, stderr: "" });
    expect(await cli("help", "key:rotate")).toEqual({ code: 0, stdout: expected, stderr: "" });
  });
});

describe("a wrong command line exits 2 with the reason and the usage on stderr", () => {
  it.each([
    [["key:revoke"], `error: Missing --key\n${KEY_USAGE("key:revoke")}`],
    [["key:rotate", "--key"], `error: --key needs a value: --key KEY_ID\n${KEY_USAGE("key:rotate")}`],
    // Without the check "--json" would be taken as the key id.
    [["key:rotate", "--key", "--json"], `error: --key needs a value: --key KEY_ID\n${KEY_USAGE("key:rotate")}`],
    [
      ["key:revoke", "key_01m842w0p5r8yrmq0ekzqffs16"],
      `error: Unexpected argument 'key_01m842w0p5r8yrmq0ekzqffs16': every value follows its option, as below\n${KEY_USAGE("key:revoke")}`,
    ],
    [
      ["key:revoke", "--key", "key_a", "--key", "key_b"],
      `error: --key is given more than once\n${KEY_USAGE("key:revoke")}`,
    ],
    [["key:revoke", "--key", "key_a", "--json=yes"], `error: --json takes no value\n${KEY_USAGE("key:revoke")}`],
    [["key:revoke", "--org", "org_a"], `error: Unknown option '--org' for key:revoke\n${KEY_USAGE("key:revoke")}`],
    [
      ["org:create", "--email", "a@example.com"],
      "error: Missing --name\n" +
        "Usage: pnpm admin org:create --email EMAIL --name NAME [--signing-secret SECRET] [--json]\n" +
        "  --email EMAIL            the owner's email address; the account is created when missing\n" +
        "  --name NAME              the organization's name, 1 to 200 characters\n" +
        "  --signing-secret SECRET  whsec_ followed by padded base64 of at least 24 bytes, or any text of 24 to 256 characters; generated when left out\n",
    ],
    [
      ["member:add"],
      "error: Missing --org and --email\n" +
        "Usage: pnpm admin member:add --org ORG_ID --email EMAIL [--json]\n" +
        "  --org ORG_ID   the organization's id, org_…, from org:create or org:list\n" +
        "  --email EMAIL  the member's email address; the account is created when missing\n",
    ],
    [["nope"], `error: Unknown command 'nope'\n${COMMAND_LIST}\nRun 'pnpm admin help' for their options.\n`],
    [["help", "nope"], `error: Unknown command 'nope'\n${COMMAND_LIST}\nRun 'pnpm admin help' for their options.\n`],
    [
      ["--json", "org:list"],
      `error: The command comes first: pnpm admin <command> [options] [--json]\n${COMMAND_LIST}\n`,
    ],
    // The operator's own text is shown escaped, never raw.
    [
      ["org\u001b[2J\n"],
      `error: Unknown command 'org\\u001b[2J\\u000a'\n${COMMAND_LIST}\nRun 'pnpm admin help' for their options.\n`,
    ],
  ])("refuses %j", async (argv, stderr) => {
    expect(await cli(...argv)).toEqual({ code: 2, stdout: "", stderr });
  });
});
