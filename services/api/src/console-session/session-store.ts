import { createHash, randomBytes } from "node:crypto";
import {
  type ApiKeyConsoleSessions,
  AppError,
  apiKeyConsoleSessions,
  type Clock,
  type Config,
  consoleSessionIndexKey,
  consoleSessionKey,
  consoleSessionKeyPrefix,
  type Logger,
  type Redis,
  type SessionCredential,
  withTimeout,
} from "@punctual/core";

// Console sessions live in Redis under the queue prefix, one key per session that expires with it.
// The browser holds only the session's random id (in an HttpOnly cookie); Redis holds a digest of
// the id as the key, so neither a look at Redis nor a leaked key name gives a usable cookie. The
// record names what the session was opened with (the API key's id, a digest of the admin token),
// never the secret itself, so that each request can check the credential is still good.
//
// Each credential (an API key, the admin token) also has an index of its sessions by age, which
// keeps only its newest MAX_SESSIONS_PER_CREDENTIAL: signing in again and again with one key holds
// a bounded amount of Redis, and revoking or rotating the key finds its sessions to delete them.

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

/**
 * The sessions one API key, or the admin token, may hold at once: opening one more ends the oldest.
 * Enough for a team sharing a key across its people and browsers for a working day; small enough
 * that a script signing in all day holds a few kilobytes, not megabytes.
 */
export const MAX_SESSIONS_PER_CREDENTIAL = 50;

/** The credential a session was opened with, which names its index. */
const credentialOf = (session: NewSession | ConsoleSession): SessionCredential =>
  session.kind === "organization" ? { apiKeyId: session.apiKeyId } : { adminTokenDigest: session.adminTokenDigest };

// Stores a session and adds it to its credential's index in one step, so that concurrent sign-ins
// through several API processes cannot leave more than the cap. Scores are Redis's own clock in
// milliseconds (whole numbers Lua prints exactly), raised past the newest member's when not above
// it, so the order is the order of opening whichever process opened them. Members whose session has expired are dropped first; the index
// expires with its newest session (never sooner), so an index nobody signs in with goes away.
//   KEYS: the session's key, the index. ARGV: the record, its TTL (s), the cap, the id's digest,
//   the prefix of a session's key (for the evicted ones).
const OPEN = `
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local ttl = tonumber(ARGV[2])
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", "(" .. (now - ttl * 1000))
local newest = redis.call("ZRANGE", KEYS[2], -1, -1, "WITHSCORES")
if newest[2] and tonumber(newest[2]) >= now then now = tonumber(newest[2]) + 1 end
redis.call("SET", KEYS[1], ARGV[1], "EX", ttl)
redis.call("ZADD", KEYS[2], now, ARGV[4])
local excess = redis.call("ZCARD", KEYS[2]) - tonumber(ARGV[3])
if excess > 0 then
  for _, digest in ipairs(redis.call("ZRANGE", KEYS[2], 0, excess - 1)) do
    redis.call("DEL", ARGV[5] .. digest)
  end
  redis.call("ZREMRANGEBYRANK", KEYS[2], 0, excess - 1)
end
if redis.call("PTTL", KEYS[2]) < ttl * 1000 then redis.call("PEXPIRE", KEYS[2], ttl * 1000) end
return excess`;

export function createConsoleSessions(deps: ConsoleSessionsDeps): ConsoleSessions {
  const ttlSeconds = deps.config.CONSOLE_SESSION_TTL_SECONDS;
  const prefix = deps.config.QUEUE_PREFIX;
  const keyOf = (id: string) => consoleSessionKey(prefix, sha256(id));

  return {
    async open(fields) {
      const id = randomBytes(32).toString("base64url");
      const expiresAt = new Date(deps.clock.now().getTime() + ttlSeconds * 1000).toISOString();
      const session = { ...fields, expiresAt } as ConsoleSession;
      await answered(
        deps.redis.eval(
          OPEN,
          2,
          keyOf(id),
          consoleSessionIndexKey(prefix, credentialOf(fields)),
          JSON.stringify(session),
          ttlSeconds,
          MAX_SESSIONS_PER_CREDENTIAL,
          sha256(id),
          consoleSessionKeyPrefix(prefix),
        ),
      );
      return { id, session };
    },
    async read(id) {
      // Anything that is not an id this store made costs no round trip.
      if (!SESSION_ID_PATTERN.test(id)) return undefined;
      const stored = await answered(deps.redis.get(keyOf(id)));
      return stored === null ? undefined : (JSON.parse(stored) as ConsoleSession);
    },
    async end(id) {
      if (!SESSION_ID_PATTERN.test(id)) return;
      // The record names its credential, hence its index; an index member left behind would count
      // against the cap until it expired.
      const stored = await answered(deps.redis.get(keyOf(id)));
      if (stored === null) return;
      const index = consoleSessionIndexKey(prefix, credentialOf(JSON.parse(stored) as ConsoleSession));
      await answered(deps.redis.multi().del(keyOf(id)).zrem(index, sha256(id)).exec());
    },
  };
}

/**
 * What the admin API's key revocation and rotation delete: the key's sessions in this API's Redis.
 * A failure is logged; the key is refused at once anyway (every request checks it in Postgres).
 */
export function apiKeySessionsOf(deps: {
  config: Pick<Config, "QUEUE_PREFIX">;
  redis: Redis;
  logger: Logger;
}): ApiKeyConsoleSessions {
  return apiKeyConsoleSessions({
    redis: () => deps.redis,
    prefix: deps.config.QUEUE_PREFIX,
    timeoutMs: STORE_TIMEOUT_MS,
    failed: (apiKeyId, error) =>
      deps.logger.warn({ err: error, apiKeyId }, "could not delete the console sessions of a revoked API key"),
  });
}
