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

/** Postgres error code of a failed query, if there is one (e.g. "23505" for a unique violation). */
export function isUniqueViolation(error: unknown): boolean {
  return error instanceof Prisma.PrismaClientKnownRequestError && error.code === "P2002";
}
