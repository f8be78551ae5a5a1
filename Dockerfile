# Punctual: one image for every process (API, worker, migrations, admin CLI).
# The API and the worker run from plain JavaScript bundles built into dist/ (`pnpm build`): no
# TypeScript loader in those long-running processes, which saves ~35 MB of memory in each. The
# bundles load their packages from node_modules, and the short-lived commands (migrations, admin
# CLI) still run the TypeScript under tsx, so the image carries the sources plus the full
# dependency tree; pick the process with the command:
#   docker run IMAGE                      -> the API (default)
#   docker run IMAGE node --liftoff-only dist/worker.js
#   docker run IMAGE pnpm db:migrate
#   docker run IMAGE pnpm admin <command>
# Settings come from the container's environment (`docker run -e DATABASE_URL=… IMAGE`, or
# compose): the image holds no .env (.dockerignore). Each process checks Postgres and Redis as it
# starts and exits 1 with one line saying what is wrong; a restart policy retries until they are up.

# Pin a 20.x release (the engines field asks for >= 20.19).
ARG NODE_IMAGE=node:20.20.2-bookworm-slim

# ---------------------------------------------------------------------------------------------
# base: Node plus pnpm, shared by both stages (the runtime stage runs its commands through pnpm).
# ---------------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS base
# pnpm comes from npm, not corepack: corepack rejects this pnpm release (signature mismatch).
RUN npm install --global pnpm@12.21.0 \
    && npm cache clean --force
# No update check: the image never changes its pnpm.
ENV pnpm_config_update_notifier=false
WORKDIR /app

# ---------------------------------------------------------------------------------------------
# deps: install the workspace from the manifests alone, so that this layer (the slow one) is
# rebuilt only when a manifest, the lockfile or the Prisma schema changes, not on every source edit.
# ---------------------------------------------------------------------------------------------
FROM base AS deps
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml ./
# Every workspace package's manifest: pnpm needs all of them to honour --frozen-lockfile.
# (A new workspace package needs a line here too.)
COPY packages/core/package.json packages/core/
COPY packages/db/package.json packages/db/
COPY packages/client/package.json packages/client/
COPY services/api/package.json services/api/
COPY services/worker/package.json services/worker/
COPY services/admin/package.json services/admin/
COPY services/console/package.json services/console/
# The root postinstall runs `prisma generate`, which reads the schema through prisma.config.ts
# and writes the client into packages/db/src/generated/prisma.
COPY prisma ./prisma
COPY prisma.config.ts ./
# Development dependencies are installed on purpose (NODE_ENV is not "production" in this
# stage): esbuild builds the bundles, tsx runs the migrations and the admin CLI, and the prisma
# CLI applies the migrations; all are devDependencies of the root package.
RUN pnpm install --frozen-lockfile

# ---------------------------------------------------------------------------------------------
# runtime
# ---------------------------------------------------------------------------------------------
FROM base AS runtime
# pnpm_config_verify_deps_before_run: before each `pnpm <script>`, pnpm checks node_modules
# against the lockfile and installs when they differ. Here they always "differ": the tree was
# installed by root with root's store directory, and user node has another, so every start would
# try to remove and reinstall node_modules (it fails on the root-owned files and carries on, with an
# error in the log). The image's dependencies never change after the build, so the check is off.
# MALLOC_ARENA_MAX: glibc gives every thread that allocates (V8's compiler and GC helpers, libuv's
# pool) a malloc arena of its own and keeps their freed memory; two arenas hold 5-15 MB less per
# process at no measurable CPU cost. MALLOC_MMAP_THRESHOLD_: blocks of 128 KB and more are always
# mapped on their own and given back when freed (glibc otherwise raises that bound as large blocks
# are freed, and keeps them in a heap that fragments): an idle worker holds about 6 MB less.
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072 \
    pnpm_config_verify_deps_before_run=false

# Take the whole installed tree from deps, not only /app/node_modules: pnpm also puts a
# node_modules folder (symlinks into the root's node_modules/.pnpm) in each workspace package
# (packages/*/node_modules, services/*/node_modules), and the postinstall's generated Prisma
# client lives in packages/db/src/generated. COPY keeps pnpm's relative symlinks as they are.
COPY --from=deps /app ./
# Then the sources. .dockerignore leaves out every node_modules folder, the generated client and
# dist/, so this layer cannot overwrite what deps installed (or what is built next) with a stale
# copy from the build host.
COPY . .
# dist/api.js, dist/worker.js, dist/start-all.js, ... The bundles import their packages by paths
# into this image's node_modules, so they are built here, never copied in.
RUN pnpm build

# Files stay owned by root (the app only reads them); the processes run unprivileged.
# tsx (pnpm db:migrate, pnpm admin) keeps its compile cache in the system temp directory, which
# user node can write.
# /var/lib/punctual is the one place the app writes: the API's generated admin token
# (ADMIN_TOKEN_FILE in docker-compose.yml). It belongs to user node and no one else may read it; a
# new named volume mounted there takes this owner and mode.
RUN install -d -o node -g node -m 0700 /var/lib/punctual
USER node

EXPOSE 3000
# node itself, not `pnpm start:api`: pnpm's script shell does not pass SIGTERM on (graceful stop),
# and dist/ is already built (`pnpm start:*` would first check it is fresh, for a checkout).
# --liftoff-only: see docker-compose.yml (Prisma's WebAssembly without V8's optimizing tier).
CMD ["node", "--liftoff-only", "dist/api.js"]
