import { PrismaPg } from "@prisma/adapter-pg";
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

/** One Prisma client over node-postgres (no query engine binary), for a Postgres URL. */
export function createDb(url: string, options: CreateDbOptions = {}): Db {
  const adapter = new PrismaPg({
    connectionString: url,
    max: options.poolSize ?? 10,
    // Fail a request fast rather than queueing behind a dead server for a long time.
    connectionTimeoutMillis: 5_000,
  });
  return new PrismaClient({ adapter });
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
