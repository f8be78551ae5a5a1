// A failure that is not a refusal by the operation is most often the database: not started, not
// migrated, wrong credentials. Prisma's message for it is a dozen lines quoting our own source
// with the reason last; the operator gets that reason and what to do about it.

const REACH = "is Postgres running, and is DATABASE_URL right?";
const CREDENTIALS = "check the user and password of DATABASE_URL";
const MIGRATE = "run pnpm db:migrate first";

/** Prisma's error codes. */
const ADVICE: Record<string, string> = {
  P1001: REACH, // can't reach the server
  P1002: REACH, // timed out
  P1000: CREDENTIALS, // authentication failed
  P1010: CREDENTIALS, // access denied
  P1003: MIGRATE, // the database does not exist
  P2021: MIGRATE, // a table does not exist
};

/** Postgres' codes, which Prisma passes on for raw queries (P2010). */
const ADVICE_BY_SQLSTATE: Record<string, string> = {
  "42P01": MIGRATE, // undefined table
  "3D000": MIGRATE, // invalid catalog name: no such database
  "28000": CREDENTIALS,
  "28P01": CREDENTIALS,
};

interface PrismaLike {
  code?: unknown;
  meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; originalMessage?: unknown } } };
}

/** One sentence for an error that is not an AppError. */
export function failureMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const { code, meta } = (error ?? {}) as PrismaLike;
  const cause = meta?.driverAdapterError?.cause;
  const sqlAdvice = typeof cause?.originalCode === "string" ? ADVICE_BY_SQLSTATE[cause.originalCode] : undefined;
  if (sqlAdvice && typeof cause?.originalMessage === "string") return `${cause.originalMessage} (${sqlAdvice})`;
  // Prisma's message ends with the reason.
  const reason = (
    text
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean)
      .at(-1) ?? "unknown error"
  ).replace(/\.$/, "");
  const advice = typeof code === "string" ? ADVICE[code] : undefined;
  return advice ? `${reason} (${advice})` : `Unexpected failure: ${reason}`;
}
