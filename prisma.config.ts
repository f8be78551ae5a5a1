// Prisma CLI configuration. The CLI runs the JavaScript schema engine over @prisma/adapter-pg,
// so migrations need no engine binary download (the machines running this have no access to it).
import { existsSync } from "node:fs";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { defineConfig } from "prisma/config";

// The working directory's .env, as every Punctual entry point reads it (@punctual/core's
// loadEnvFile): a variable already set wins, PUNCTUAL_ENV_FILE names another file or `none`.
// Inline because the image installs (and generates the client through this file) before the
// sources are copied in.
const settingsFile = process.env.PUNCTUAL_ENV_FILE || ".env";
if (settingsFile !== "none" && existsSync(settingsFile)) process.loadEnvFile(settingsFile);

/** Connection fields from DATABASE_URL, kept separate so a shadow database can replace `database`. */
function connectionFields(): pg.ClientConfig {
  const raw = process.env.DATABASE_URL;
  if (!raw) throw new Error("DATABASE_URL must be set (in the environment or in .env) to run Prisma migrations");
  const url = new URL(raw);
  return {
    host: decodeURIComponent(url.hostname),
    port: url.port ? Number(url.port) : 5432,
    user: decodeURIComponent(url.username) || undefined,
    password: url.password ? decodeURIComponent(url.password) : undefined,
    database: decodeURIComponent(url.pathname.replace(/^\//, "")) || undefined,
  };
}

// adapter-pg cannot decode the catalog column types `name` (OID 19) and `"char"` (OID 18) that
// the schema engine's introspection queries return (prisma/orm#27403); both are plain text.
const TEXT_OID = 25;
type QueryResultLike = { fields?: { dataTypeID: number }[] } | undefined;
function retypeCatalogColumns<T>(result: T): T {
  for (const field of (result as QueryResultLike)?.fields ?? []) {
    if (field.dataTypeID === 19 || field.dataTypeID === 18) field.dataTypeID = TEXT_OID;
  }
  return result;
}

class CatalogTextClient extends pg.Client {
  // biome-ignore lint/suspicious/noExplicitAny: pg's query has a dozen overloads; this wrapper forwards all of them
  override query(...args: any[]): any {
    const last = args.at(-1);
    if (typeof last === "function") {
      args[args.length - 1] = (error: unknown, result: unknown) =>
        last(error, error ? result : retypeCatalogColumns(result));
      // biome-ignore lint/suspicious/noExplicitAny: see above
      return (super.query as any)(...args);
    }
    // biome-ignore lint/suspicious/noExplicitAny: see above
    const returned = (super.query as any)(...args);
    return returned instanceof Promise ? returned.then(retypeCatalogColumns) : returned;
  }
}

function poolFor(fields: pg.ClientConfig): pg.Pool {
  // allowExitOnIdle: the CLI never ends the pool, whose idle connections would otherwise keep the
  // process alive for the idle timeout (10 s) after its work is done.
  return new pg.Pool({ ...fields, Client: CatalogTextClient, allowExitOnIdle: true } as pg.PoolConfig);
}

function migrationAdapterFactory() {
  const fields = connectionFields();
  const main = new PrismaPg(poolFor(fields));
  return {
    provider: "postgres" as const,
    adapterName: main.adapterName,
    connect: () => main.connect(),
    // `migrate dev` diffs against a throwaway shadow database. The stock implementation drops it
    // while its pool is still open; here the pool is closed first.
    async connectToShadowDb() {
      const admin = await main.connect();
      const database = `prisma_shadow_${crypto.randomUUID().replaceAll("-", "")}`;
      await admin.executeScript(`CREATE DATABASE "${database}"`);
      const shadow = await new PrismaPg(poolFor({ ...fields, database })).connect();
      const dispose = shadow.dispose.bind(shadow);
      shadow.dispose = async () => {
        await dispose();
        await shadow.underlyingDriver().end();
        await admin.executeScript(`DROP DATABASE IF EXISTS "${database}"`);
        await admin.dispose();
      };
      return shadow;
    },
  };
}

export default defineConfig({
  experimental: { adapter: true },
  engine: "js",
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  adapter: async () => migrationAdapterFactory(),
});
