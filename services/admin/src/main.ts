import { loadConfig, loadEnvFile, orExit } from "@punctual/core";
import { createDb, type Db } from "@punctual/db";
import { runCli } from "./cli.ts";

orExit(() => loadEnvFile());
const config = orExit(() => loadConfig());
let db: Db | undefined;
const code = await runCli(
  process.argv.slice(2),
  () => {
    db = createDb(config.DATABASE_URL, { poolSize: 2 });
    return { db, config };
  },
  { stdout: (text) => process.stdout.write(text), stderr: (text) => process.stderr.write(text) },
);
await db?.$disconnect();
process.exitCode = code;
