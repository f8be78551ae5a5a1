import type { Redis } from "./redis.ts";
import { withTimeout } from "./timeout.ts";

// Where the web console's sessions live in Redis. The API opens, reads and ends them; the admin CLI
// deletes an API key's sessions when it revokes or rotates the key, whether or not an API is
// running, so both take the names from here. Every name is under QUEUE_PREFIX: on a Redis Cluster
// they share its hash tag's slot, and one script may touch a credential's index and its sessions.

/** One session's record, stored under a SHA-256 of its id (the cookie's value), never the id. */
export const consoleSessionKey = (prefix: string, idDigest: string) => `${prefix}:console-session:${idDigest}`;

/** The credential a session was opened with: an organization's API key, or the admin token. */
export type SessionCredential = { apiKeyId: string } | { adminTokenDigest: string };

/**
 * The index of one credential's sessions: a sorted set of their ids' digests, scored by when each
 * was opened. It is what caps a credential's sessions and finds them when the key is revoked.
 */
export function consoleSessionIndexKey(prefix: string, credential: SessionCredential): string {
  return "apiKeyId" in credential
    ? `${prefix}:console-sessions:key:${credential.apiKeyId}`
    : `${prefix}:console-sessions:operator:${credential.adminTokenDigest}`;
}

/** What precedes a digest in a session's key: the scripts build the keys of the members they read. */
export const consoleSessionKeyPrefix = (prefix: string) => consoleSessionKey(prefix, "");

// Deletes every session of the index, then the index, in one step: a session opened with the key
// while this runs is either deleted here or added to the index afterwards (and refused at its first
// use, as its key is revoked).
const END_ALL = `
local digests = redis.call("ZRANGE", KEYS[1], 0, -1)
for _, digest in ipairs(digests) do
  redis.call("DEL", ARGV[1] .. digest)
end
redis.call("DEL", KEYS[1])
return #digests`;

/** Deletes every console session opened with the credential; answers how many there were. */
export async function endConsoleSessionsOf(
  redis: Redis,
  prefix: string,
  credential: SessionCredential,
): Promise<number> {
  const ended = await redis.eval(
    END_ALL,
    1,
    consoleSessionIndexKey(prefix, credential),
    consoleSessionKeyPrefix(prefix),
  );
  return Number(ended);
}

/**
 * What revoking or rotating an API key does to its console sessions (AdminDeps.consoleSessions).
 * The key stops working whatever happens here: every request made with a session checks its key in
 * Postgres. So a failure is reported, never thrown: the revocation, and a rotation's new key (shown
 * only once), stand.
 */
export interface ApiKeyConsoleSessions {
  /** Deletes the sessions opened with the key. */
  endAll(apiKeyId: string): Promise<void>;
  /** Told when endAll failed or Redis did not answer in time. */
  failed(apiKeyId: string, error: unknown): void;
}

const TIMED_OUT = Symbol("timed out");

/** Deletes a key's sessions in `redis`, waiting at most `timeoutMs`, reporting a failure to `failed`. */
export function apiKeyConsoleSessions(options: {
  redis: () => Redis;
  prefix: string;
  timeoutMs: number;
  failed: (apiKeyId: string, error: unknown) => void;
}): ApiKeyConsoleSessions {
  return {
    async endAll(apiKeyId) {
      const outcome = await withTimeout(
        endConsoleSessionsOf(options.redis(), options.prefix, { apiKeyId }),
        options.timeoutMs,
        TIMED_OUT,
      );
      if (outcome === TIMED_OUT) throw new Error(`Redis did not answer within ${options.timeoutMs} ms`);
    },
    failed: options.failed,
  };
}
