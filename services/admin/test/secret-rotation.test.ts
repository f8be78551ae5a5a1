import type { AdminDeps } from "@punctual/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestContext, createTestOrganization, type TestContext } from "../../../test/support/context.ts";
import { runCliCapturing } from "./run-cli.ts";

// secret:rotate keeps the replaced secret signing beside the new one for SIGNING_SECRET_OVERLAP_MS
// (24 h by default); secret:end-overlap stops that early. What the operator reads, and what is stored.

const DAY_MS = 86_400_000;

let context: TestContext;
beforeAll(async () => {
  context = await createTestContext();
});
afterAll(() => context.close());

async function cli(argv: string[], config: Partial<AdminDeps["config"]> = {}) {
  return runCliCapturing(argv, () => ({ db: context.db, config: { ...context.config, ...config } }));
}

const json = async (...argv: string[]) => {
  const result = await cli([...argv, "--json"]);
  expect(result, argv.join(" ")).toMatchObject({ code: 0, stderr: "" });
  return JSON.parse(result.stdout);
};

const stored = (orgId: string) =>
  context.db.organization.findUniqueOrThrow({
    where: { id: orgId },
    select: { signingSecret: true, previousSigningSecret: true, previousSecretValidUntil: true },
  });

describe("secret:rotate", () => {
  it("prints the new secret and until when the replaced one also signs, 24 h from now", async () => {
    const org = await createTestOrganization(context);
    const before = Date.now();
    const result = await cli(["secret:rotate", "--org", org.orgId]);
    const after = Date.now();

    expect(result.code).toBe(0);
    const row = await stored(org.orgId);
    expect(row.previousSigningSecret).toBe(org.signingSecret);
    const until = row.previousSecretValidUntil?.getTime() ?? 0;
    // The database's clock sets it; the two clocks of this machine agree to well within a second.
    expect(until).toBeGreaterThanOrEqual(before + DAY_MS - 1_000);
    expect(until).toBeLessThanOrEqual(after + DAY_MS + 1_000);
    const untilIso = new Date(until).toISOString();
    expect(result.stdout).toBe(
      `Signing secret of ${org.orgId}: ${row.signingSecret}\n` +
        `The previous secret also signs deliveries until ${untilIso}; secret:end-overlap --org ${org.orgId} stops that sooner.\n`,
    );
  });

  it("--json prints orgId, signingSecret and previousSecretValidUntil", async () => {
    const org = await createTestOrganization(context);
    const rotated = await json("secret:rotate", "--org", org.orgId);

    const row = await stored(org.orgId);
    expect(rotated).toEqual({
      orgId: org.orgId,
      signingSecret: row.signingSecret,
      previousSecretValidUntil: row.previousSecretValidUntil?.toISOString(),
    });
    expect(rotated.signingSecret).not.toBe(org.signingSecret);
    expect(rotated.signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  });

  it("rotating again during an overlap keeps only the secret it replaces, with a new end", async () => {
    const org = await createTestOrganization(context);
    const first = await json("secret:rotate", "--org", org.orgId);
    const second = await json("secret:rotate", "--org", org.orgId);

    const row = await stored(org.orgId);
    expect(row.signingSecret).toBe(second.signingSecret);
    expect(row.previousSigningSecret).toBe(first.signingSecret);
    expect(second.previousSecretValidUntil >= first.previousSecretValidUntil).toBe(true);
    // The organization's first secret signs nothing any more.
    expect(JSON.stringify(row)).not.toContain(org.signingSecret);
  });

  it("rotating to the secret already current changes nothing, so a repeated command keeps the overlap", async () => {
    const org = await createTestOrganization(context);
    const custom = "a-custom-secret-of-thirty-characters";
    const first = await json("secret:rotate", "--org", org.orgId, "--signing-secret", custom);
    const repeated = await json("secret:rotate", "--org", org.orgId, "--signing-secret", custom);

    expect(repeated).toEqual(first);
    expect(await stored(org.orgId)).toEqual({
      signingSecret: custom,
      previousSigningSecret: org.signingSecret,
      previousSecretValidUntil: new Date(first.previousSecretValidUntil),
    });
  });

  it("with SIGNING_SECRET_OVERLAP_MS=0 replaces the secret at once", async () => {
    const org = await createTestOrganization(context);
    const result = await cli(["secret:rotate", "--org", org.orgId], { SIGNING_SECRET_OVERLAP_MS: 0 });

    expect(result.code).toBe(0);
    const row = await stored(org.orgId);
    expect(row.signingSecret).not.toBe(org.signingSecret);
    expect(row).toMatchObject({ previousSigningSecret: null, previousSecretValidUntil: null });
    expect(result.stdout).toBe(
      `Signing secret of ${org.orgId}: ${row.signingSecret}\nDeliveries are signed with this secret only.\n`,
    );
  });
});

describe("secret:end-overlap", () => {
  it("forgets the replaced secret, says so, and org:list no longer shows an overlap", async () => {
    const org = await createTestOrganization(context, "Ending");
    const rotated = await json("secret:rotate", "--org", org.orgId);
    const listed = await cli(["org:list"]);
    const line = listed.stdout.split("\n").find((text) => text.startsWith(org.orgId));
    expect(line).toMatch(new RegExp(`  previous-secret-until=${rotated.previousSecretValidUntil}$`));

    const ended = await cli(["secret:end-overlap", "--org", org.orgId]);

    expect(ended).toEqual({
      code: 0,
      stdout: `Deliveries of ${org.orgId} are signed with the current secret only.\n`,
      stderr: "",
    });
    expect(await stored(org.orgId)).toEqual({
      signingSecret: rotated.signingSecret,
      previousSigningSecret: null,
      previousSecretValidUntil: null,
    });
    const after = await cli(["org:list"]);
    expect(after.stdout.split("\n").find((text) => text.startsWith(org.orgId))).not.toContain("previous-secret-until");
  });

  it("--json prints orgId and a null previousSecretValidUntil, also with no overlap under way", async () => {
    const org = await createTestOrganization(context);
    expect(await json("secret:end-overlap", "--org", org.orgId)).toEqual({
      orgId: org.orgId,
      previousSecretValidUntil: null,
    });
    expect((await stored(org.orgId)).signingSecret).toBe(org.signingSecret);
  });

  it("org:list --json carries previousSecretValidUntil for each organization", async () => {
    const quiet = await createTestOrganization(context);
    const rotatedOrg = await createTestOrganization(context);
    const rotated = await json("secret:rotate", "--org", rotatedOrg.orgId);

    const { organizations } = await json("org:list");
    const byId = new Map(organizations.map((org: { id: string }) => [org.id, org]));
    expect(byId.get(quiet.orgId)).toMatchObject({ previousSecretValidUntil: null });
    expect(byId.get(rotatedOrg.orgId)).toMatchObject({ previousSecretValidUntil: rotated.previousSecretValidUntil });
  });
});
