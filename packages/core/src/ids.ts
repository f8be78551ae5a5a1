import { ulid } from "ulid";

export type IdPrefix = "acc" | "org" | "key" | "evt" | "cron" | "run";

/** A new record id: a type prefix and a ULID, so ids sort by creation time (contract §1). */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid().toLowerCase()}`;
}
