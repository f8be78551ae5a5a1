import { randomBytes } from "node:crypto";
import { link, mkdir, open, readFile, stat, unlink } from "node:fs/promises";
import { dirname } from "node:path";
import { AdminTokenSchema, type Config, ConfigError, type Logger } from "@punctual/core";

// The admin token without a default anywhere: either the operator sets ADMIN_TOKEN, or the API
// keeps a random token in ADMIN_TOKEN_FILE (compose points it into a volume), generated on the
// first start. A token shipped in a compose file or an example would be known to everyone.

/** `adm_` + 32 random bytes (256 bits) in base64url. */
export function generateAdminToken(): string {
  // Random text can, very rarely, contain a word the placeholder rule refuses (e.g. "admin");
  // draw again rather than generate a token the next start would refuse.
  for (;;) {
    const token = `adm_${randomBytes(32).toString("base64url")}`;
    if (AdminTokenSchema.safeParse(token).success) return token;
  }
}

/**
 * The admin token the API runs with: ADMIN_TOKEN when set; else the token stored in
 * ADMIN_TOKEN_FILE, generated there when the file does not exist; else none (admin API off).
 * Throws a ConfigError when the file holds an unusable token or cannot be read or written.
 */
export async function resolveAdminToken(
  config: Pick<Config, "ADMIN_TOKEN" | "ADMIN_TOKEN_FILE">,
  logger: Pick<Logger, "warn">,
): Promise<string | undefined> {
  if (config.ADMIN_TOKEN !== undefined) return config.ADMIN_TOKEN;
  const path = config.ADMIN_TOKEN_FILE;
  if (path === undefined) return undefined;
  try {
    return await readTokenFile(path, logger);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    if (!isErrno(error, "ENOENT")) throw fileError(path, error);
  }
  try {
    if (await createTokenFile(path)) {
      // Once, at creation: where the token is and how to read it. The token itself stays out of
      // the logs, which are kept and shipped far more widely than a 0600 file.
      logger.warn(
        { path },
        `Generated an admin token and stored it in ${path} (readable by this user only); read it with: cat ${path}`,
      );
    }
    return await readTokenFile(path, logger);
  } catch (error) {
    throw error instanceof ConfigError ? error : fileError(path, error);
  }
}

/**
 * Writes a new token to `path` unless a file is already there; true when this call created it.
 * Atomic and exclusive: the token goes to a private temporary file (flag 'wx', mode 0600) that is
 * then hard-linked to `path`. link() fails with EEXIST when the name exists, like O_EXCL, and the
 * name only ever appears with the whole token in it, so an instance starting at the same moment
 * either wins or reads the winner's complete file — never an empty one.
 */
async function createTokenFile(path: string): Promise<boolean> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${randomBytes(8).toString("hex")}.tmp`;
  const handle = await open(temporary, "wx", 0o600);
  try {
    await handle.writeFile(`${generateAdminToken()}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(temporary, path);
    return true;
  } catch (error) {
    if (isErrno(error, "EEXIST")) return false;
    throw error;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
}

async function readTokenFile(path: string, logger: Pick<Logger, "warn">): Promise<string> {
  // Surrounding whitespace is not part of the token: `echo TOKEN > file` adds a newline.
  const token = (await readFile(path, "utf8")).trim();
  const checked = AdminTokenSchema.safeParse(token);
  if (!checked.success) {
    const problem = checked.error.issues[0]?.message ?? "is not a valid token";
    throw new ConfigError(`Invalid configuration:\n  ADMIN_TOKEN_FILE: the token in ${path} ${problem}`);
  }
  if (((await stat(path)).mode & 0o077) !== 0) {
    logger.warn({ path }, `${path} holds the admin token and is readable by other users: chmod 600 ${path}`);
  }
  return checked.data;
}

function fileError(path: string, error: unknown): ConfigError {
  const reason = error instanceof Error ? error.message : String(error);
  return new ConfigError(`Invalid configuration:\n  ADMIN_TOKEN_FILE: cannot use ${path}: ${reason}`);
}

function isErrno(error: unknown, code: string): boolean {
  return typeof error === "object" && error !== null && (error as NodeJS.ErrnoException).code === code;
}
