// `pnpm start`, `pnpm start:api`, `pnpm start:worker`: runs the bundle dist/<name>.js in this
// process, first building dist/ (`pnpm build`) when it is missing or older than the sources, so a
// fresh clone starts right after `pnpm install` and an edit is never run stale.
//
//   node --liftoff-only scripts/run-dist.mjs start-all
//
// Plain JavaScript on purpose: it runs before anything is built, and without the tsx loader its
// check costs a few milliseconds when dist/ is fresh. The image runs dist/ directly (its build
// happens in the Dockerfile), so this is only the path of a checkout.
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmdirSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
/** Folders whose files end up in the bundles (test files aside). */
const SOURCE_GLOBS = [
  ["packages", "src"],
  ["services", "src"],
];
/** Single files whose change calls for a new build: the bundles import by paths into node_modules. */
const INPUT_FILES = ["package.json", "pnpm-lock.yaml", "node_modules/.modules.yaml"];
/** The web console's built page (`pnpm build` makes it with the bundles). */
const CONSOLE_PAGE = join(root, "services", "console", "dist", "index.html");
/** A build lock older than this was left by a build that died. */
const STALE_LOCK_MS = 5 * 60_000;

/** The newest modification time among the files under `dir`, test files and node_modules aside. */
function newestUnder(dir) {
  let newest = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== "node_modules") newest = Math.max(newest, newestUnder(path));
    } else if (!entry.name.endsWith(".test.ts")) {
      newest = Math.max(newest, mtimeOf(path));
    }
  }
  return newest;
}

function mtimeOf(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

/** The newest modification time of anything the bundles are built from. */
function newestSource() {
  let newest = newestUnder(join(root, "scripts"));
  for (const [parent, sub] of SOURCE_GLOBS) {
    let packages = [];
    try {
      packages = readdirSync(join(root, parent), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    } catch {
      // no such folder in this tree
    }
    for (const entry of packages) {
      newest = Math.max(newest, newestUnder(join(root, parent, entry.name, sub)));
      newest = Math.max(newest, mtimeOf(join(root, parent, entry.name, "package.json")));
    }
  }
  for (const file of INPUT_FILES) newest = Math.max(newest, mtimeOf(join(root, file)));
  return newest;
}

/** True when the bundle is missing or older than a source. */
function isStale(bundle) {
  const built = mtimeOf(bundle);
  // The console's page is built beside the bundles: a dist/ made before it existed is stale too.
  if (mtimeOf(CONSOLE_PAGE) === 0) return true;
  return built === 0 || newestSource() > built;
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Runs `work` holding the build lock (a directory: mkdir is atomic), so that `pnpm start:api` and
 * `pnpm start:worker` started together do not both rebuild dist/ under each other's feet.
 */
function withBuildLock(work) {
  const lock = join(root, ".build.lock");
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if (error.code !== "EEXIST") {
        process.stderr.write(`Cannot build dist/ in ${root}: ${error.message}. Run pnpm build as a user who may.\n`);
        process.exit(1);
      }
      if (Date.now() - mtimeOf(lock) > STALE_LOCK_MS) {
        rmdirSync(lock);
        continue;
      }
      sleep(200);
    }
  }
  try {
    return work();
  } finally {
    rmdirSync(lock);
  }
}

const name = process.argv[2];
if (!name) {
  process.stderr.write("Usage: node scripts/run-dist.mjs <api|worker|start-all>\n");
  process.exit(2);
}
const bundle = join(root, "dist", `${name}.js`);

if (isStale(bundle)) {
  withBuildLock(() => {
    // Another process may have built it while this one waited for the lock.
    if (!isStale(bundle)) return;
    process.stderr.write("Building Punctual (dist/ is missing or stale)…\n");
    // The build's own report goes to stderr: stdout is the service's (its JSON logs).
    const build = spawnSync(process.execPath, ["--import", "tsx", "scripts/build.ts"], {
      cwd: root,
      stdio: ["ignore", 2, 2],
    });
    if (build.status !== 0) {
      process.stderr.write("The build failed (see above). Fix it, then start again (or run pnpm build alone).\n");
      process.exit(1);
    }
  });
}

// The bundle runs as if started as `node dist/<name>.js`, with this process's flags.
process.argv.splice(1, 2, bundle);
await import(pathToFileURL(bundle).href);
