import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { newId } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../../services/api/src/app.ts";
import { createTestApiDeps, createTestContext, type TestContext } from "../../../test/support/context.ts";
import { runCliCapturing } from "./run-cli.ts";

// A name or email with a newline or an ANSI escape forged a line of `pnpm admin org:list` and
// coloured the terminal. Such characters are refused by both surfaces, and the CLI never prints
// one raw, even from a row that was written to the database by other means.

const ADMIN_TOKEN = "adm_Hq8vN2cLr5TzW9pXk3Ys";
/** Every character that must never reach a terminal raw; "\n" is allowed only between lines. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

let context: TestContext;
let server: Server;
let base: string;
beforeAll(async () => {
  context = await createTestContext({ ADMIN_TOKEN });
  server = createApp(createTestApiDeps(context).deps).listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => server.once("listening", () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await context.close();
});

async function cli(...argv: string[]) {
  return runCliCapturing(argv, () => ({ db: context.db, config: context.config }));
}

const HOSTILE = [
  ["a newline", "Acme\nORG_FORGED  Evil"],
  ["an ANSI escape", "Acme\u001b[31mred"],
  ["a tab", "Acme\tInc"],
  ["NUL", "Acme\u0000"],
  ["DEL", "Acme\u007f"],
  ["a C1 CSI", "Acme\u009b31m"],
  ["a line separator", "Acme\u2028Evil"],
  ["a right-to-left override", "Acme\u202egpj.exe"],
  ["a bidi isolate", "Acme\u2066x\u2069"],
  ["a trailing carriage return", "Acme\r"],
] as const;

const NAME_MESSAGE = "'name' must not contain control characters, line breaks or bidirectional overrides";
const EMAIL_MESSAGE = "'email' must not contain control characters, line breaks or bidirectional overrides";

describe("control characters in names and emails", () => {
  it.each(HOSTILE)("the admin API refuses a name with %s (400) and creates nothing", async (_label, name) => {
    const before = await context.db.organization.count();
    const answer = await request(base)
      .post("/api/admin/organizations")
      .set("authorization", `Bearer ${ADMIN_TOKEN}`)
      .send({ email: "api-hostile@example.com", name });
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ message: NAME_MESSAGE });
    expect(await context.db.organization.count()).toBe(before);
  });

  it.each(HOSTILE)("the admin API refuses an email with %s (400)", async (_label, text) => {
    const email = `${text.replace(/[^\p{Cc}\u2028\u202e\u2066\u2069]/gu, "")}x@example.com`;
    for (const [path, body] of [
      ["/api/admin/accounts", { email }],
      ["/api/admin/organizations", { email, name: "Acme" }],
    ] as const) {
      const answer = await request(base).post(path).set("authorization", `Bearer ${ADMIN_TOKEN}`).send(body);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ message: EMAIL_MESSAGE });
    }
  });

  it("the CLI refuses such a name and such an email with a clear error", async () => {
    const name = await cli("org:create", "--email", "cli-hostile@example.com", "--name", "Acme\u001b[2J\nforged");
    // The API's field names become the CLI's flags.
    expect(name).toEqual({ code: 1, stdout: "", stderr: `error: --name${NAME_MESSAGE.slice("'name'".length)}\n` });
    const email = await cli("account:create", "--email", "cli\u001b[31m@example.com");
    expect(email).toEqual({ code: 1, stdout: "", stderr: `error: --email${EMAIL_MESSAGE.slice("'email'".length)}\n` });
    expect(await context.db.account.count({ where: { email: { startsWith: "cli" } } })).toBe(0);
  });

  it("org:list never prints a raw control character of a row already in the database", async () => {
    // Written around the validation, as an older version or a manual SQL session could have.
    const accountId = newId("acc");
    const orgId = newId("org");
    const name = "Evil\u001b[31m\nORG_FORGED\u009b2J\u202eX\u0007";
    const email = `legacy-${orgId}\u001b]0;title\u0007@example.com`;
    await context.db.$executeRaw`INSERT INTO accounts (id, email) VALUES (${accountId}, ${email})`;
    await context.db.$executeRaw`
      INSERT INTO organizations (id, name, owner_id, signing_secret) VALUES (${orgId}, ${name}, ${accountId}, 'whsec_x')`;
    await context.db
      .$executeRaw`INSERT INTO memberships (org_id, account_id, role) VALUES (${orgId}, ${accountId}, 'owner')`;

    const all = await cli("org:list");
    expect(all.code).toBe(0);
    expect(all.stdout).not.toMatch(RAW_UNSAFE);
    // One line per organization: the name forged none.
    expect(all.stdout.trimEnd().split("\n")).toHaveLength(await context.db.organization.count());
    const line = all.stdout.split("\n").find((row) => row.startsWith(orgId));
    expect(line).toContain("Evil\\u001b[31m\\u000aORG_FORGED\\u009b2J\\u202eX\\u0007");
    expect(line).toContain(`owner=legacy-${orgId}\\u001b]0;title\\u0007@example.com`);

    const json = await cli("org:list", "--json");
    expect(json.stdout.slice(0, -1)).not.toMatch(RAW_UNSAFE);
    const listed = JSON.parse(json.stdout).organizations.find((org: { id: string }) => org.id === orgId);
    // Escaped on the way out only: the JSON still parses to the stored values.
    expect(listed).toMatchObject({ name, ownerEmail: email });
  });
});
