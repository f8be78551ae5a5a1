import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../../services/api/src/app.ts";
import { createTestApiDeps, createTestContext, type TestContext } from "../../../test/support/context.ts";
import { runCliCapturing } from "./run-cli.ts";

// "Acme" and "\ufeffAcme" looked the same in the operator's list of organizations, as did "Café"
// typed composed or as "e" and a combining acute. Both surfaces refuse invisible characters and
// floods of combining marks, and store names composed (NFC).

const ADMIN_TOKEN = "adm_Rt6wQ9mZk2Vb8Ls4Hn7Pc3";
const INVISIBLE = "'name' must not contain invisible characters such as zero-width spaces, joiners or byte order marks";

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

const createOrganization = (name: string) =>
  request(base)
    .post("/api/admin/organizations")
    .set("authorization", `Bearer ${ADMIN_TOKEN}`)
    .send({ email: "names@example.com", name });

describe("organization names", () => {
  it.each([
    ["a byte order mark", "\ufeffAcme"],
    ["a zero-width space", "Ac\u200bme"],
    ["a zero-width joiner", "Ac\u200dme"],
    ["a left-to-right mark", "Acme\u200e"],
    ["an Arabic letter mark", "\u061cAcme"],
  ])("the admin API refuses a name with %s (400) and creates nothing", async (_label, name) => {
    const before = await context.db.organization.count();
    const answer = await createOrganization(name);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ message: INVISIBLE });
    expect(await context.db.organization.count()).toBe(before);
  });

  it("the admin API refuses a flood of combining marks (400)", async () => {
    const answer = await createOrganization(`Acme${"\u0300\u0301\u0302\u0303\u0304\u0305".repeat(30)}`);
    expect(answer.status).toBe(400);
    expect(answer.body).toEqual({ message: "'name' must not stack more than 4 combining marks on one character" });
  });

  it("the admin API stores a name composed, however it was typed", async () => {
    const answer = await createOrganization("Cafe\u0301 Vie\u0323\u0302t");
    expect(answer.status).toBe(201);
    const { name } = await context.db.organization.findUniqueOrThrow({ where: { id: answer.body.orgId } });
    expect(name).toBe("Caf\u00e9 Vi\u1ec7t");
    const listed = await request(base).get("/api/admin/organizations").set("authorization", `Bearer ${ADMIN_TOKEN}`);
    expect(listed.body.find((org: { id: string }) => org.id === answer.body.orgId).name).toBe("Caf\u00e9 Vi\u1ec7t");
  });

  it("the CLI refuses an invisible character and stores a name composed", async () => {
    const deps = () => ({ db: context.db, config: context.config });
    const refused = await runCliCapturing(
      ["org:create", "--email", "cli-names@example.com", "--name", "Acme\ufeff"],
      deps,
    );
    expect(refused).toEqual({ code: 1, stdout: "", stderr: `error: --name${INVISIBLE.slice("'name'".length)}\n` });

    const created = await runCliCapturing(
      ["org:create", "--email", "cli-names@example.com", "--name", "A\u030angstro\u0308m", "--json"],
      deps,
    );
    expect(created.code).toBe(0);
    const { orgId } = JSON.parse(created.stdout);
    const { name } = await context.db.organization.findUniqueOrThrow({ where: { id: orgId } });
    expect(name).toBe("\u00c5ngstr\u00f6m");
  });
});
