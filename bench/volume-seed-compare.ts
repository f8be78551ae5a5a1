// Seeds the volume data set at a given size twice, secondary indexes dropped and re-built after the
// load, then kept in place, and prints both timings: `node --import tsx bench/volume-seed-compare.ts 200000`.
import { createTestDatabase, withClient } from "@punctual/db/testing";
import { seedVolume } from "./lib/volume-seed.ts";

const events = Number(process.argv[2] ?? 200_000);
for (const dropIndexes of [true, false]) {
  const database = await createTestDatabase();
  try {
    const timings = await withClient(database.url, (db) =>
      seedVolume(db, events, "bench-volume-compare", dropIndexes, () => {}),
    );
    process.stdout.write(
      `${events} events, indexes ${dropIndexes ? "dropped and re-built" : "kept"}: ${JSON.stringify(timings)}\n`,
    );
  } finally {
    await database.drop();
  }
}
