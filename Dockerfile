# Punctual: one image for every process (API, worker, migrations, admin CLI).
# The TypeScript runs directly under tsx (no build step), so the image carries the sources plus
# the full dependency tree; pick the process with the command:
#   docker run IMAGE                      -> the API (default)
#   docker run IMAGE node --import tsx services/worker/src/main.ts
#   docker run IMAGE pnpm db:migrate
#   docker run IMAGE pnpm admin <command>

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
COPY services/api/package.json services/api/
COPY services/worker/package.json services/worker/
COPY services/admin/package.json services/admin/
# The root postinstall runs `prisma generate`, which reads the schema through prisma.config.ts
# and writes the client into packages/db/src/generated/prisma.
COPY prisma ./prisma
COPY prisma.config.ts ./
# Development dependencies are installed on purpose (NODE_ENV is not "production" in this
# stage): tsx runs every process and the prisma CLI runs the migrations, and both are
# devDependencies of the root package.
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
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    pnpm_config_verify_deps_before_run=false

# Take the whole installed tree from deps, not only /app/node_modules: pnpm also puts a
# node_modules folder (symlinks into the root's node_modules/.pnpm) in each workspace package
# (packages/*/node_modules, services/*/node_modules), and the postinstall's generated Prisma
# client lives in packages/db/src/generated. COPY keeps pnpm's relative symlinks as they are.
COPY --from=deps /app ./
# Then the sources. .dockerignore leaves out every node_modules folder and the generated client,
# so this layer cannot overwrite what deps installed with a stale copy from the build host.
COPY . .

# Files stay owned by root (the app only reads them); the processes run unprivileged.
# tsx keeps its compile cache in the system temp directory, which user node can write.
USER node

EXPOSE 3000
# node itself, not `pnpm start:api`: pnpm's script shell does not pass SIGTERM on (graceful stop).
CMD ["node", "--import", "tsx", "services/api/src/main.ts"]
