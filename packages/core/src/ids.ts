import { randomBytes } from "node:crypto";

type IdPrefix = "acc" | "org" | "key" | "evt" | "cron" | "run" | "whk";

// Crockford's base32 (no i, l, o, u), lower-case, as in a ULID.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
const RANDOM_CHARS = 16;

// Random bytes are drawn in blocks: asking the system for a few bytes per id costs far more than
// the id itself (ids are made on every event create).
let pool = Buffer.alloc(0);
let poolOffset = 0;

function randomChars(count: number): string {
  if (poolOffset + count > pool.length) {
    pool = randomBytes(4096);
    poolOffset = 0;
  }
  let chars = "";
  for (let n = 0; n < count; n++) chars += ALPHABET[(pool[poolOffset + n] as number) & 31];
  poolOffset += count;
  return chars;
}

/**
 * A new record id: a type prefix and a ULID (48-bit millisecond time, then 80 random bits, in 26
 * base32 characters), so ids sort by creation time (contract §1).
 */
export function newId(prefix: IdPrefix): string {
  let time = Date.now();
  let timeChars = "";
  for (let n = 0; n < 10; n++) {
    timeChars = ALPHABET[time % 32] + timeChars;
    time = Math.floor(time / 32);
  }
  return `${prefix}_${timeChars}${randomChars(RANDOM_CHARS)}`;
}
