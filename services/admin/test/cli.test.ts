import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { hashApiKey } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, type TestContext } from "../../../test/support/context.ts";
import { runCliCapturing } from "./run-cli.ts";

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

const root = resolve(import.meta.dirname, "../../..");
const shellEnv = () => ({ ...process.env, DATABASE_URL: context.config.DATABASE_URL, LOG_LEVEL: "silent" });

/** Runs the CLI in this process against the test database; returns exit code and output. */
async function cli(...argv: string[]) {
  return runCliCapturing(argv, () => ({ db: context.db, config: context.config }));
}

describe("pnpm admin", () => {
  it("org:create --json prints exactly the five fields, and the key works by its hash only", async () => {
    // The real command, as an operator runs it: pnpm's own lines go to stderr, stdout is the JSON.
    const { stdout } = await promisify(execFile)(
      "pnpm",
      ["admin", "org:create", "--email", "Shell@Example.com", "--name", "Acme", "--json"],
      { cwd: root, env: shellEnv() },
    );
    const printed = JSON.parse(stdout) as Record<string, string>;
    expect(Object.keys(printed).sort()).toEqual(["accountId", "apiKey", "keyId", "orgId", "signingSecret"]);
    expect(printed.apiKey).toMatch(/^pk_[A-Za-z0-9_-]{43}$/);
    expect(printed.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const keys = await context.db.apiKey.findMany({ where: { orgId: printed.orgId } });
    expect(keys).toHaveLength(1);
    expect(keys[0]?.id).toBe(printed.keyId);
    expect(keys[0]?.hash).toBe(hashApiKey(printed.apiKey as string));
    expect(keys[0]?.prefix).toBe(printed.apiKey?.slice(0, 11));
    // Nothing stored anywhere holds the key in clear.
    const everything =
      JSON.stringify(await context.db.apiKey.findMany()) + JSON.stringify(await context.db.organization.findMany());
    expect(everything).not.toContain(printed.apiKey);
    const account = await context.db.account.findUnique({ where: { id: printed.accountId } });
    expect(account?.email).toBe("shell@example.com");
  });

  it("allows at most 5 organizations per account, and the 6th leaves nothing behind", async () => {
    for (let n = 1; n <= 5; n++) {
      const created = await cli("org:create", "--email", "five@example.com", "--name", `Org ${n}`, "--json");
      expect(created.code).toBe(0);
    }
    const orgsBefore = await context.db.organization.count();
    const keysBefore = await context.db.apiKey.count();
    const sixth = await cli("org:create", "--email", "five@example.com", "--name", "Org 6", "--json");
    expect(sixth.code).toBe(1);
    expect(sixth.stdout).toBe("");
    expect(sixth.stderr).toBe("error: Organization limit of 5 reached for this account\n");
    expect(await context.db.organization.count()).toBe(orgsBefore);
    expect(await context.db.apiKey.count()).toBe(keysBefore);
  });

  it("holds the limit when creates race", async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, n) => cli("org:create", "--email", "race@example.com", "--name", `Race ${n}`)),
    );
    expect(results.filter((result) => result.code === 0)).toHaveLength(5);
    const account = await context.db.account.findUnique({ where: { email: "race@example.com" } });
    expect(await context.db.organization.count({ where: { ownerId: account?.id } })).toBe(5);
  });

  it("shows a key once: listings give only its prefix", async () => {
    const org = JSON.parse((await cli("org:create", "--email", "keys@example.com", "--name", "K", "--json")).stdout);
    const key = JSON.parse((await cli("key:create", "--org", org.orgId, "--json")).stdout);
    const listed = await cli("key:list", "--org", org.orgId, "--json");
    expect(listed.stdout).not.toContain(key.apiKey);
    expect(JSON.parse(listed.stdout).keys).toHaveLength(2);
  });

  it("rotates and revokes keys and the signing secret", async () => {
    const org = JSON.parse((await cli("org:create", "--email", "rot@example.com", "--name", "R", "--json")).stdout);
    const rotated = JSON.parse((await cli("key:rotate", "--key", org.keyId, "--json")).stdout);
    expect(rotated.revokedKeyId).toBe(org.keyId);
    expect(rotated.apiKey).not.toBe(org.apiKey);
    expect((await context.db.apiKey.findUnique({ where: { id: org.keyId } }))?.revokedAt).toBeInstanceOf(Date);

    const again = await cli("key:rotate", "--key", org.keyId);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("error: A revoked API key cannot be rotated; create a new key instead\n");

    const revoked = JSON.parse((await cli("key:revoke", "--key", rotated.keyId, "--json")).stdout);
    expect(revoked.keyId).toBe(rotated.keyId);

    const secret = JSON.parse((await cli("secret:rotate", "--org", org.orgId, "--json")).stdout);
    expect(secret.signingSecret).not.toBe(org.signingSecret);
    const custom = "a-custom-secret-of-thirty-characters";
    const set = JSON.parse(
      (await cli("secret:rotate", "--org", org.orgId, "--signing-secret", custom, "--json")).stdout,
    );
    expect(set.signingSecret).toBe(custom);
    expect((await context.db.organization.findUnique({ where: { id: org.orgId } }))?.signingSecret).toBe(custom);
  });

  it("adds members, creating their account, once", async () => {
    const org = JSON.parse((await cli("org:create", "--email", "owner@example.com", "--name", "M", "--json")).stdout);
    const added = await cli("member:add", "--org", org.orgId, "--email", "new.member@example.com", "--json");
    expect(added.code).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({
      orgId: org.orgId,
      email: "new.member@example.com",
      role: "member",
    });
    const twice = await cli("member:add", "--org", org.orgId, "--email", "new.member@example.com");
    expect(twice.code).toBe(1);
    expect(twice.stderr).toBe(`error: new.member@example.com is already a member of ${org.orgId}\n`);
    const listed = JSON.parse((await cli("org:list", "--email", "new.member@example.com", "--json")).stdout);
    expect(listed.organizations.map((o: { id: string }) => o.id)).toEqual([org.orgId]);
  });

  it("the README's shell lines keep org:create's JSON and take the API key and its id from it", async () => {
    // pnpm prints its own "$ node …" line; on stderr, so $(…) holds the JSON only.
    const script = `
      set -eu
      CREATED=$(pnpm admin org:create --email readme@example.com --name Demo --json)
      KEY=$(node -pe 'JSON.parse(process.argv[1]).apiKey' "$CREATED")
      KEY_ID=$(node -pe 'JSON.parse(process.argv[1]).keyId' "$CREATED")
      ONE_LINE=$(pnpm admin org:create --email readme@example.com --name Demo2 --json | node -pe 'JSON.parse(require("fs").readFileSync(0)).apiKey')
      ROTATED=$(pnpm --silent admin key:rotate --key "$KEY_ID" --json)
      printf '%s\n' "$KEY" "$KEY_ID" "$ONE_LINE" "$ROTATED"`;
    const { stdout } = await promisify(execFile)("bash", ["-c", script], { cwd: root, env: shellEnv() });
    const [key, keyId, oneLine, rotatedJson] = stdout.trimEnd().split("\n") as [string, string, string, string];
    expect(key).toMatch(/^pk_[A-Za-z0-9_-]{43}$/);
    expect(oneLine).toMatch(/^pk_[A-Za-z0-9_-]{43}$/);
    const stored = await context.db.apiKey.findUnique({ where: { id: keyId } });
    expect(stored?.hash).toBe(hashApiKey(key));
    expect(stored?.revokedAt).toBeInstanceOf(Date);
    expect(JSON.parse(rotatedJson)).toMatchObject({ revokedKeyId: keyId, orgId: stored?.orgId });
    expect(await context.db.apiKey.count({ where: { hash: hashApiKey(oneLine), revokedAt: null } })).toBe(1);
    // Three pnpm and four node starts: slow on a busy machine.
  }, 90_000);

  it("--json makes every command print exactly one JSON object and nothing else", async () => {
    const org = JSON.parse((await cli("org:create", "--email", "every@example.com", "--name", "E", "--json")).stdout);
    const runs = [
      ["account:create", "--email", "every.account@example.com"],
      ["org:create", "--email", "every@example.com", "--name", "E2"],
      ["org:list", "--email", "every@example.com"],
      ["member:add", "--org", org.orgId, "--email", "every.member@example.com"],
      ["key:create", "--org", org.orgId],
      ["key:list", "--org", org.orgId],
      ["key:rotate", "--key", org.keyId],
      ["secret:rotate", "--org", org.orgId],
      ["secret:end-overlap", "--org", org.orgId],
    ];
    const printed: Record<string, unknown> = {};
    for (const argv of runs) {
      const result = await cli(...argv, "--json");
      expect(result, argv.join(" ")).toMatchObject({ code: 0, stderr: "" });
      expect(result.stdout.endsWith("}\n") && result.stdout.indexOf("\n") === result.stdout.length - 1).toBe(true);
      printed[argv[0] as string] = JSON.parse(result.stdout);
    }
    const revokedKey = (printed["key:create"] as { keyId: string }).keyId;
    const revoked = await cli("key:revoke", "--key", revokedKey, "--json");
    expect(JSON.parse(revoked.stdout)).toEqual({ keyId: revokedKey, revokedAt: expect.any(String) });
    expect(Object.keys(printed["org:create"] as object).sort()).toEqual([
      "accountId",
      "apiKey",
      "keyId",
      "orgId",
      "signingSecret",
    ]);
    expect((printed["org:list"] as { organizations: unknown[] }).organizations).toHaveLength(2);
    expect((printed["key:list"] as { keys: { id: string }[] }).keys.map((key) => key.id)).toContain(org.keyId);
  });

  it("account:create refuses a duplicate email", async () => {
    expect((await cli("account:create", "--email", "dup@example.com")).code).toBe(0);
    const again = await cli("account:create", "--email", "DUP@example.com");
    expect(again.code).toBe(1);
    expect(again.stderr).toBe("error: An account with email dup@example.com already exists\n");
  });
});
