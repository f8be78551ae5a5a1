// A failure that is not a refusal by the operation is most often the database: not started, not
// migrated, wrong credentials. Prisma's message for it is a dozen lines quoting our own source
// with the reason last; the operator gets that reason and what to do about it.

const ADVICE: Record<string, string> = {
  // Can't reach database server; timed out.
  P1001: "is Postgres running, and is DATABASE_URL right?",
  P1002: "is Postgres running, and is DATABASE_URL right?",
  // Authentication failed; access denied.
  P1000: "check the user and password of DATABASE_URL",
  P1010: "check the user and password of DATABASE_URL",
  // The database, or a table, does not exist.
  P1003: "run pnpm db:migrate first",
  P2021: "run pnpm db:migrate first",
};

/** One sentence for an error that is not an AppError. */
export function failureMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  const reason = (
    text
      .split("\n")
      .map((line) => line.trim())
      .filter(Boolean)
      .at(-1) ?? "unknown error"
  ).replace(/\.$/, "");
  const code = (error as { code?: unknown } | null)?.code;
  const advice = typeof code === "string" ? ADVICE[code] : undefined;
  return advice ? `${reason} (${advice})` : `Unexpected failure: ${reason}`;
}
