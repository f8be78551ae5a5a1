import { createHash, randomBytes } from "node:crypto";
import { AppError, type Clock, type Config, type Redis, withTimeout } from "@punctual/core";

// Console sessions live in Redis under the queue prefix, one key per session that expires with it.
// The browser holds only the session's random id (in an HttpOnly cookie); Redis holds a digest of
// the id as the key, so neither a look at Redis nor a leaked key name gives a usable cookie. The
// record names what the session was opened with (the API key's id, a digest of the admin token),
// never the secret itself, so that each request can check the credential is still good.

/** An organization's session: opened with one of its API keys, it lasts while that key does. */
export interface OrganizationSession {
  kind: "organization";
  orgId: string;
  apiKeyId: string;
  /** The rate limiter's subject of the key (a digest): requests count against the key's budget. */
  rateLimitKey: string;
  expiresAt: string;
}

/** The operator's session: opened with the admin token, it lasts while that token is configured. */
export interface OperatorSession {
  kind: "operator";
  /** A digest of the admin token it was opened with; a changed token ends the session. */
  adminTokenDigest: string;
  expiresAt: string;
}

export type ConsoleSession = OrganizationSession | OperatorSession;

/** What a session is opened with: everything but its expiry, which the store sets. */
export type NewSession = Omit<OrganizationSession, "expiresAt"> | Omit<OperatorSession, "expiresAt">;

export interface ConsoleSessions {
  /** Stores a new session; returns its id (the cookie's value) and when it ends. */
  open(session: NewSession): Promise<{ id: string; session: ConsoleSession }>;
  /** The live session of an id, or undefined (unknown, expired or ended). */
  read(id: string): Promise<ConsoleSession | undefined>;
  end(id: string): Promise<void>;
}

export interface ConsoleSessionsDeps {
  config: Pick<Config, "QUEUE_PREFIX" | "CONSOLE_SESSION_TTL_SECONDS">;
  redis: Redis;
  clock: Clock;
}

/** Longest wait for Redis: the API's connection waits for a reconnect, a request must not. */
const STORE_TIMEOUT_MS = 2_000;
export const SESSIONS_UNAVAILABLE = "Console sessions are unavailable, please try again later";
const TIMED_OUT = Symbol("timed out");

/** `operation`'s value, or 503 when Redis does not answer in time. */
async function answered<T>(operation: Promise<T>): Promise<T> {
  const outcome = await withTimeout(operation, STORE_TIMEOUT_MS, TIMED_OUT);
  if (outcome === TIMED_OUT) throw new AppError("UNAVAILABLE", SESSIONS_UNAVAILABLE);
  return outcome;
}

/** A session id: 256 random bits, base64url (43 characters), as the cookie carries it. */
export const SESSION_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

/** The digest an operator session keeps of the admin token (tagged, so it is no plain hash of it). */
export const adminTokenDigest = (adminToken: string) => sha256(`punctual console operator\0${adminToken}`);

export function createConsoleSessions(deps: ConsoleSessionsDeps): ConsoleSessions {
  const ttlSeconds = deps.config.CONSOLE_SESSION_TTL_SECONDS;
  const keyOf = (id: string) => `${deps.config.QUEUE_PREFIX}:console-session:${sha256(id)}`;

  return {
    async open(fields) {
      const id = randomBytes(32).toString("base64url");
      const expiresAt = new Date(deps.clock.now().getTime() + ttlSeconds * 1000).toISOString();
      const session = { ...fields, expiresAt } as ConsoleSession;
      await answered(deps.redis.set(keyOf(id), JSON.stringify(session), "EX", ttlSeconds));
      return { id, session };
    },
    async read(id) {
      // Anything that is not an id this store made costs no round trip.
      if (!SESSION_ID_PATTERN.test(id)) return undefined;
      const stored = await answered(deps.redis.get(keyOf(id)));
      return stored === null ? undefined : (JSON.parse(stored) as ConsoleSession);
    },
    async end(id) {
      if (SESSION_ID_PATTERN.test(id)) await answered(deps.redis.del(keyOf(id)));
    },
  };
}
