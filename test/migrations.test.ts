import { createEmptyDatabase, migrateDatabase } from "@punctual/db/testing";
import pg from "pg";
import { expect, it } from "vitest";

it("applies every migration to an empty database", async () => {
  const database = await createEmptyDatabase();
  try {
    await migrateDatabase(database.url);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const tables = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
    );
    const applied = await client.query<{ finished_at: Date | null; rolled_back_at: Date | null }>(
      "SELECT finished_at, rolled_back_at FROM _prisma_migrations",
    );
    await client.end();
    expect(tables.rows.map((row) => row.table_name)).toEqual([
      "_prisma_migrations",
      "accounts",
      "api_keys",
      "cron_jobs",
      "cron_runs",
      "event_attempts",
      "event_labels",
      "event_monthly_usage",
      "events",
      "flows",
      "memberships",
      "notifications",
      "organizations",
      "webhooks",
    ]);
    expect(applied.rows.length).toBeGreaterThan(0);
    expect(applied.rows.every((row) => row.finished_at !== null && row.rolled_back_at === null)).toBe(true);
  } finally {
    await database.drop();
  }
}, 60_000);
