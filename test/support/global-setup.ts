import { prepareTemplateDatabase } from "@punctual/db/testing";

/** Runs once before all test files: makes sure the migrated template database exists. */
export default async function setup(): Promise<void> {
  await prepareTemplateDatabase();
}
