import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { consoleSessionIndexKey } from "@punctual/core";
import request from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../services/api/src/app.ts";
import {
  createTestApiDeps,
  createTestContext,
  createTestOrganization,
  type TestContext,
  type TestOrganization,
} from "./support/context.ts";
import { freePort, repositoryRoot } from "./support/processes.ts";

// The admin CLI revokes and rotates keys straight in Postgres, with or without an API running, and
// deletes the key's console sessions in Redis as the admin API does. Each test runs the CLI as an
// operator does, in its own process, with the settings of this file's database and Redis prefix.

let context: TestContext;
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  context = await createTestContext({ TRUST_PROXY: "loopback" });
  await context.redis.ping();
  app = createApp(createTestApiDeps(context).deps);
});
afterAll(() => context.close());

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** `pnpm admin …` as its own process (node and tsx, as the script runs it). */
async function admin(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", "services/admin/src/main.ts", ...args],
      {
        cwd: repositoryRoot,
        env: {
          ...process.env,
          PUNCTUAL_ENV_FILE: "none",
          DATABASE_URL: context.config.DATABASE_URL,
          REDIS_URL: context.config.REDIS_URL ?? "",
          QUEUE_PREFIX: context.config.QUEUE_PREFIX,
          LOG_LEVEL: "silent",
          ...env,
        },
      },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

let nextAddress = 1;
async function signIn(org: TestOrganization): Promise<string> {
  const response = await request(app)
    .post("/console/api/session")
    .set("x-forwarded-for", `192.0.2.${nextAddress++}`)
    .send({ apiKey: org.apiKey });
  expect(response.status).toBe(200);
  const header = (response.headers["set-cookie"] as unknown as string[] | undefined) ?? [];
  return (header.find((line) => line.startsWith("punctual_session=")) ?? "").split(";")[0] ?? "";
}

async function keyIdOf(org: TestOrganization): Promise<string> {
  return (await context.db.apiKey.findFirstOrThrow({ where: { orgId: org.orgId } })).id;
}

/** How many session records of this key Redis holds. */
async function storedSessionsOf(apiKeyId: string): Promise<number> {
  const keys = await context.redis.keys(`${context.config.QUEUE_PREFIX}:console-session:*`);
  if (keys.length === 0) return 0;
  const values = await context.redis.mget(...keys);
  return values.filter((value) => value !== null && JSON.parse(value).apiKeyId === apiKeyId).length;
}

const indexExists = (apiKeyId: string) =>
  context.redis.exists(consoleSessionIndexKey(context.config.QUEUE_PREFIX, { apiKeyId }));

async function expectSignedOut(cookie: string): Promise<void> {
  const events = await request(app).get("/api/events").set("cookie", cookie);
  expect({ status: events.status, body: events.body }).toEqual({ status: 401, body: { message: "Not signed in" } });
}

// Each CLI run starts node and tsx (seconds on a loaded machine); one waits 5 s for a Redis that is not there.
describe("pnpm admin and the console's sessions", { timeout: 90_000 }, () => {
  it("key:revoke deletes the key's sessions from Redis: a stored session answers 401 right after", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const cookies = [await signIn(org), await signIn(org)];
    expect(await storedSessionsOf(keyId)).toBe(2);

    const run = await admin(["key:revoke", "--key", keyId]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Revoked ${keyId} at `));
    expect(run.stderr).not.toContain("warning");
    expect(await storedSessionsOf(keyId)).toBe(0);
    expect(await indexExists(keyId)).toBe(0);
    for (const cookie of cookies) await expectSignedOut(cookie);
  });

  it("key:rotate deletes the old key's sessions, and the new key signs in", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const cookie = await signIn(org);

    const run = await admin(["key:rotate", "--key", keyId, "--json"]);
    expect(run.code).toBe(0);
    const rotated = JSON.parse(run.stdout) as { apiKey: string; revokedKeyId: string };
    expect(rotated.revokedKeyId).toBe(keyId);
    expect(await storedSessionsOf(keyId)).toBe(0);
    await expectSignedOut(cookie);
    const renewed = await signIn({ ...org, apiKey: rotated.apiKey });
    expect((await request(app).get("/api/events").set("cookie", renewed)).status).toBe(200);
  });

  it("revokes the key all the same when Redis cannot be reached, and says its sessions are refused from now on", async () => {
    const org = await createTestOrganization(context);
    const keyId = await keyIdOf(org);
    const cookie = await signIn(org);

    const unreachable = `redis://127.0.0.1:${await freePort()}`;
    const run = await admin(["key:revoke", "--key", keyId], { REDIS_URL: unreachable });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`^Revoked ${keyId} at `));
    expect(run.stderr).toContain(`warning: the console sessions of ${keyId} could not be deleted from Redis`);
    expect((await context.db.apiKey.findUniqueOrThrow({ where: { id: keyId } })).revokedAt).not.toBeNull();
    // Still stored, but the key is what every request checks.
    expect(await storedSessionsOf(keyId)).toBe(1);
    await expectSignedOut(cookie);
  });

  it("needs no Redis for the commands that do not revoke a key", async () => {
    const org = await createTestOrganization(context);
    const unreachable = `redis://127.0.0.1:${await freePort()}`;
    const run = await admin(["key:list", "--org", org.orgId], { REDIS_URL: unreachable });
    expect(run).toMatchObject({ code: 0, stderr: "" });
    expect(run.stdout).toContain("active");
  });
});
