import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../../../test/support/context.ts";
import { runCliCapturing } from "./run-cli.ts";

// Values the operations refuse (exit 1), worded for the person at the terminal: the flag they
// typed rather than the operation's field, the id that names nothing, and the identifier of
// another kind passed where an id was expected.

let context: TestContext;
let org: { orgId: string; keyId: string; apiKey: string };
beforeAll(async () => {
  context = await createTestContext();
  org = JSON.parse((await cli("org:create", "--email", "ids@example.com", "--name", "Ids", "--json")).stdout);
});
afterAll(() => context.close());

async function cli(...argv: string[]) {
  return runCliCapturing(argv, () => ({ db: context.db, config: context.config }));
}

/** Every row that a refused command could have written or changed. */
async function snapshot() {
  return JSON.stringify([
    await context.db.account.findMany({ orderBy: { id: "asc" } }),
    await context.db.organization.findMany({ orderBy: { id: "asc" } }),
    await context.db.membership.findMany({ orderBy: [{ orgId: "asc" }, { accountId: "asc" }] }),
    await context.db.apiKey.findMany({ orderBy: { id: "asc" } }),
  ]);
}

const NO_KEY = (id: string) => `error: No such API key: ${id} (key:list --org ORG_ID lists an organization's keys)\n`;
const NO_ORG = (id: string) => `error: No such organization: ${id} (org:list lists the organizations)\n`;

describe("ids of the right form that name nothing", () => {
  it.each([
    [["key:revoke", "--key", "key_doesnotexist"], NO_KEY("key_doesnotexist")],
    [["key:rotate", "--key", "key_doesnotexist"], NO_KEY("key_doesnotexist")],
    [["key:revoke", "--key", "key_00000000000000000000000000"], NO_KEY("key_00000000000000000000000000")],
    [["key:create", "--org", "org_doesnotexist"], NO_ORG("org_doesnotexist")],
    [["key:list", "--org", "org_doesnotexist"], NO_ORG("org_doesnotexist")],
    [["member:add", "--org", "org_doesnotexist", "--email", "m@example.com"], NO_ORG("org_doesnotexist")],
    [["secret:rotate", "--org", "org_00000000000000000000000000"], NO_ORG("org_00000000000000000000000000")],
    [["secret:end-overlap", "--org", "org_doesnotexist"], NO_ORG("org_doesnotexist")],
  ])("%j says the id names nothing, exits 1 and changes nothing", async (argv, stderr) => {
    const before = await snapshot();
    expect(await cli(...argv, "--json")).toEqual({ code: 1, stdout: "", stderr });
    expect(await snapshot()).toBe(before);
  });
});

describe("an identifier of another kind where an id is expected", () => {
  it.each([
    [
      ["key:revoke", "--key", "pk_4JfPFFDSnxJTOv18eGw1cAePLFAYJ1NKjFxcUxJ6E3w"],
      "--key expects the key's id (key_…), not the API key itself; find ids with key:list --org ORG_ID",
    ],
    [
      ["key:rotate", "--key", "org_01m842w0nev0hjbnbys4cy6es8"],
      "--key expects the key's id (key_…), not an organization id; find ids with key:list --org ORG_ID",
    ],
    [
      ["key:list", "--org", "key_01m842w0p5r8yrmq0ekzqffs16"],
      "--org expects the organization's id (org_…), not an API key id; find ids with org:list",
    ],
    [
      ["secret:rotate", "--org", "acc_01m842w0mhpws2m81khr2sp0b0"],
      "--org expects the organization's id (org_…), not an account id; find ids with org:list",
    ],
  ])("%j is named as such and exits 1", async (argv, message) => {
    const before = await snapshot();
    expect(await cli(...argv)).toEqual({ code: 1, stdout: "", stderr: `error: ${message}\n` });
    expect(await snapshot()).toBe(before);
  });

  it("the API key itself is never echoed back", async () => {
    const refused = await cli("key:rotate", "--key", org.apiKey);
    expect(refused.code).toBe(1);
    expect(refused.stderr).not.toContain(org.apiKey);
    expect(refused.stderr).toContain("not the API key itself");
  });
});

describe("refused values name the flag, not the operation's field", () => {
  it.each([
    [["key:revoke", "--key", "bogus"], "--key must be an API key id (key_…)"],
    [["key:rotate", "--key", "key_01M842W0P5R8YRMQ0EKZQFFS16"], "--key must be an API key id (key_…)"],
    [["key:list", "--org", "acme"], "--org must be an organization id (org_…)"],
    [["member:add", "--org", "org_", "--email", "m@example.com"], "--org must be an organization id (org_…)"],
    [["account:create", "--email", "nope"], "--email must be a valid email address"],
    [["org:list", "--email", "nope"], "--email must be a valid email address"],
    [["org:create", "--email", "a@example.com", "--name", "  "], "--name must not be empty"],
    [["org:create", "--email", "a@example.com", "--name", "x".repeat(201)], "--name must be at most 200 characters"],
    [
      ["org:create", "--email", "a@example.com", "--name", "X", "--signing-secret", "short"],
      "--signing-secret must be 'whsec_' followed by padded base64 of at least 24 bytes, or any text of at least 24 characters",
    ],
    [
      ["secret:rotate", "--org", "org_x", "--signing-secret", "y".repeat(257)],
      "--signing-secret must be at most 256 characters",
    ],
    [
      ["org:create", "--email", "a@example.com", "--name", "A\u001bB"],
      "--name must not contain control characters, line breaks or bidirectional overrides",
    ],
  ])("refuses %j naming the flag, exit 1", async (argv, message) => {
    const before = await snapshot();
    expect(await cli(...argv)).toEqual({ code: 1, stdout: "", stderr: `error: ${message}\n` });
    expect(await snapshot()).toBe(before);
  });
});

describe("ids printed by one command work in the next", () => {
  it("org:create prints the first key's id, readable and in JSON, and key:rotate takes it", async () => {
    const readable = await cli("org:create", "--email", "lines@example.com", "--name", "Lines");
    expect(readable.code).toBe(0);
    const lines = readable.stdout.trimEnd().split("\n");
    expect(lines.map((line) => line.replace(/:.*/, ""))).toEqual([
      "Organization",
      "Owner account",
      "API key id",
      "API key",
      "Signing secret",
      "The API key is shown only now",
    ]);
    const printedKeyId = /^API key id: +(key_\S+)$/m.exec(readable.stdout)?.[1] as string;
    const orgId = /^Organization: +(org_\S+)$/m.exec(readable.stdout)?.[1] as string;
    expect((await context.db.apiKey.findMany({ where: { orgId } })).map((key) => key.id)).toEqual([printedKeyId]);

    const rotated = await cli("key:rotate", "--key", printedKeyId);
    expect(rotated.code).toBe(0);
    expect(rotated.stdout).toMatch(
      new RegExp(`^Revoked: +${printedKeyId}\nAPI key id: +key_[0-9a-z]{26}\nAPI key: +pk_`),
    );
    expect((await context.db.apiKey.findUnique({ where: { id: printedKeyId } }))?.revokedAt).toBeInstanceOf(Date);

    // The JSON form: the id of the very key it printed.
    const rotatedJson = JSON.parse((await cli("key:rotate", "--key", org.keyId, "--json")).stdout);
    expect(rotatedJson.revokedKeyId).toBe(org.keyId);
    const keys = await context.db.apiKey.findMany({ where: { orgId: org.orgId }, orderBy: { createdAt: "asc" } });
    expect(keys.map((key) => [key.id, key.revokedAt !== null])).toEqual([
      [org.keyId, true],
      [rotatedJson.keyId, false],
    ]);
  });
});
