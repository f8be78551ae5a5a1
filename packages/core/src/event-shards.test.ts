import { describe, expect, it } from "vitest";
import { consumedShards, eventQueueLabel, eventQueuePrefixes, eventShardOf, keySlot } from "./event-shards.ts";

describe("keySlot", () => {
  it("hashes as Redis Cluster does, by the hash tag when there is one", () => {
    // Values from the Redis Cluster specification and `CLUSTER KEYSLOT`.
    expect(keySlot("foo")).toBe(12182);
    expect(keySlot("123456789")).toBe(0x31c3 % 16384);
    expect(keySlot("{user1000}.following")).toBe(keySlot("{user1000}.followers"));
    expect(keySlot("{user1000}.following")).toBe(keySlot("user1000"));
    // An empty tag is no tag: the whole key is hashed.
    expect(keySlot("{}x")).not.toBe(keySlot(""));
  });
});

describe("event shards", () => {
  it("keeps QUEUE_PREFIX itself with one shard, and gives each of N shards a tag in its own range of slots", () => {
    expect(eventQueuePrefixes({ QUEUE_PREFIX: "punctual", QUEUE_SHARDS: 1 })).toEqual(["punctual"]);
    for (const count of [2, 3, 5, 8]) {
      const prefixes = eventQueuePrefixes({ QUEUE_PREFIX: "{punctual}", QUEUE_SHARDS: count });
      expect(new Set(prefixes).size).toBe(count);
      for (const [shard, prefix] of prefixes.entries()) {
        expect(prefix).toMatch(new RegExp(`^\\{punctual-${shard}(-\\d+)?\\}$`));
        expect(Math.floor((keySlot(prefix) * count) / 16384)).toBe(shard);
      }
    }
    // The same settings always give the same names.
    expect(eventQueuePrefixes({ QUEUE_PREFIX: "{p}:x", QUEUE_SHARDS: 3 })).toEqual(
      eventQueuePrefixes({ QUEUE_PREFIX: "{p}:x", QUEUE_SHARDS: 3 }),
    );
  });

  it("picks an event's shard from its id alone, spreading ids about evenly", () => {
    expect(eventShardOf("evt_anything", 1)).toBe(0);
    expect(eventShardOf("evt_01JABCDEF", 4)).toBe(eventShardOf("evt_01JABCDEF", 4));
    const counts = new Map<number, number>();
    for (let n = 0; n < 4000; n++) {
      const shard = eventShardOf(`evt_${n.toString(36).padStart(8, "0")}`, 4);
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect([...counts.keys()].sort()).toEqual([0, 1, 2, 3]);
    for (const count of counts.values()) expect(count).toBeGreaterThan(800);
  });

  it("consumes every shard unless WORKER_SHARDS names some, and labels shards only when there are several", () => {
    expect(consumedShards({ QUEUE_SHARDS: 3, WORKER_SHARDS: undefined })).toEqual([0, 1, 2]);
    expect(consumedShards({ QUEUE_SHARDS: 3, WORKER_SHARDS: [2] })).toEqual([2]);
    expect(eventQueueLabel(0, 1)).toBe("events");
    expect(eventQueueLabel(2, 3)).toBe("events-2");
  });
});
