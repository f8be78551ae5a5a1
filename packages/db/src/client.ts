import { readdir } from "node:fs/promises";
import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { Prisma, PrismaClient } from "./generated/prisma/client.ts";

export type * from "./generated/prisma/models.ts";
export { Prisma, PrismaClient };

/** The Prisma client, or a transaction handed out by `$transaction`. */
export type Db = PrismaClient;
export type DbTransaction = Prisma.TransactionClient;
export type DbOrTransaction = Db | DbTransaction;

export interface CreateDbOptions {
  /** Largest number of pooled connections. */
  poolSize?: number;
}

interface DirectPool {
  pool: pg.Pool;
  /** Prisma has taken the pool (so that `$disconnect` ends it). */
  adopted?: Promise<void>;
}

/** The node-postgres pool under each client made by `createDb`, for `queryRows`. */
const directPools = new WeakMap<Db, DirectPool>();

/** One Prisma client over node-postgres (no query engine binary), for a Postgres URL. */
export function createDb(url: string, options: CreateDbOptions = {}): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: options.poolSize ?? 10,
    // Fail a request fast rather than queueing behind a dead server for a long time.
    connectionTimeoutMillis: 5_000,
  });
  // An idle connection whose server went away is dropped by the pool and replaced on the next
  // query; without a listener its error would end the process before Prisma has connected.
  pool.on("error", () => {});
  // The pool is Prisma's (it ends it on `$disconnect`); `queryRows` borrows its connections.
  const client = new PrismaClient({ adapter: new PrismaPg(pool, { disposeExternalPool: true }) });
  directPools.set(client, { pool });
  return client;
}

/** Names of the statements run by `queryRows`, by text: node-postgres prepares each once per connection. */
const statementNames = new Map<string, string>();

function statementName(text: string): string {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `punctual_${statementNames.size + 1}`;
    statementNames.set(text, name);
  }
  return name;
}

/**
 * Runs one raw statement and returns its rows, as `db.$queryRaw` does. On a client made by
 * `createDb` the statement goes straight to its node-postgres pool: Prisma's own work per raw
 * query costs several times the CPU of sending it, which matters on the API's per-request paths.
 * Any other Db (a transaction, a wrapper, a client whose pool has ended) goes through `$queryRaw`.
 * Only for statements whose columns node-postgres and Prisma read alike (text, integer, boolean,
 * timestamptz): `bigint`, `date` and JSON columns come back differently. The statement is prepared
 * once per connection, so its text must not vary with the data (lists go in array parameters).
 */
export async function queryRows<T>(db: Db, query: Prisma.Sql): Promise<T[]> {
  const direct = directPools.get(db);
  if (direct && !direct.pool.ending) {
    direct.adopted ??= db.$connect().catch((error: unknown) => {
      direct.adopted = undefined;
      throw error;
    });
    await direct.adopted;
    if (!direct.pool.ending) {
      const statement = { name: statementName(query.text), text: query.text, values: query.values };
      return (await direct.pool.query(statement)).rows as T[];
    }
  }
  // As a tagged template call, so that a wrapper of `$queryRaw` sees what any other caller passes.
  const strings = Object.assign([...query.strings], { raw: [...query.strings] });
  return db.$queryRaw<T[]>(strings, ...query.values);
}

/**
 * True when Postgres ran a statement and refused it (a constraint, a deadlock, bad data: it rolled
 * back, and the same work split differently may pass), as opposed to the statement not reaching
 * Postgres or its answer being lost (no connection, a timeout), where trying again is no better.
 */
export function isRefusedStatement(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) return true;
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2010";
}

/**
 * True when a query failed on a unique constraint: P2002 from the ORM's queries, or P2010 with
 * SQLSTATE 23505 from raw SQL (`$queryRaw` reports the driver's error as it is).
 */
export function isUniqueViolation(error: unknown): boolean {
  if (!(error instanceof Prisma.PrismaClientKnownRequestError)) return false;
  if (error.code === "P2002") return true;
  const cause = (error.meta as { driverAdapterError?: { cause?: { originalCode?: string } } } | undefined)
    ?.driverAdapterError?.cause;
  return error.code === "P2010" && cause?.originalCode === "23505";
}

/** What `probeDatabase` found; `reason` is the driver's, without the URL (it may hold a password). */
export type DatabaseProbe =
  | { status: "ready" }
  /** No connection: nothing listens, unknown host, no answer in time, TLS refused… */
  | { status: "unreachable"; reason: string }
  /** The server answered and refused the user or password. */
  | { status: "login-refused"; reason: string }
  /** The server is up and has no database of that name. */
  | { status: "missing" }
  /** The database lacks committed migrations; `empty`: it has none applied (no tables yet). */
  | { status: "not-migrated"; pending: string[]; empty: boolean };

/** prisma/migrations beside the sources (the bundles in dist/ keep this module's own URL). */
const MIGRATIONS_DIR = new URL("../../../prisma/migrations/", import.meta.url);

/** Names of the committed migrations; none when the folder is not there (only a bundle shipped). */
async function committedMigrations(): Promise<string[]> {
  try {
    const entries = await readdir(MIGRATIONS_DIR, { withFileTypes: true });
    return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch {
    return [];
  }
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: "connection refused",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host not found",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "connection timed out",
};

/** A short reason for a failed connection; an AggregateError (IPv4 and IPv6 both tried) by its first. */
function connectionReason(error: unknown, timeoutMs: number): string {
  const first = error instanceof AggregateError && error.errors.length > 0 ? error.errors[0] : error;
  const code = (first as NodeJS.ErrnoException | undefined)?.code;
  if (code && CONNECTION_ERRORS[code]) return CONNECTION_ERRORS[code];
  const message = first instanceof Error ? first.message : String(first);
  if (/timeout/i.test(message)) return `no answer within ${timeoutMs / 1000} s`;
  return message;
}

/**
 * Checks, at a process's start, that the database at `url` can be used: the server answers within
 * `timeoutMs`, accepts the login, has the database, and has every committed migration applied.
 * Never throws for a database problem; says which one it is.
 */
export async function probeDatabase(url: string, timeoutMs: number): Promise<DatabaseProbe> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs, query_timeout: timeoutMs });
  // An error after the connect (the server going away mid-check) must not end the process.
  client.on("error", () => {});
  try {
    await client.connect();
  } catch (error) {
    await client.end().catch(() => {});
    if (error instanceof pg.DatabaseError) {
      // 3D000: invalid_catalog_name; 28000/28P01: invalid authorization / password.
      if (error.code === "3D000") return { status: "missing" };
      if (error.code === "28000" || error.code === "28P01") return { status: "login-refused", reason: error.message };
    }
    return { status: "unreachable", reason: connectionReason(error, timeoutMs) };
  }
  try {
    const committed = await committedMigrations();
    const table = await client.query<{ found: string | null }>(
      "SELECT to_regclass('_prisma_migrations')::text AS found",
    );
    if (table.rows[0]?.found == null) return { status: "not-migrated", pending: committed, empty: true };
    const applied = await client.query<{ migration_name: string }>(
      "SELECT migration_name FROM _prisma_migrations WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL",
    );
    const done = new Set(applied.rows.map((row) => row.migration_name));
    const pending = committed.filter((name) => !done.has(name)).sort();
    return pending.length > 0 ? { status: "not-migrated", pending, empty: false } : { status: "ready" };
  } catch (error) {
    // Refused by Postgres (no right to read the table, say): not a reason to stop the start here;
    // the process reports it when it uses the database.
    if (error instanceof pg.DatabaseError) return { status: "ready" };
    return { status: "unreachable", reason: connectionReason(error, timeoutMs) };
  } finally {
    await client.end().catch(() => {});
  }
}
