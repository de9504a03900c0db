# syntax=docker/dockerfile:1
# Animal Store container image: `docker build -t animal-store .`, then
# `docker run -p 8080:8080 -v animal-store-data:/data animal-store` (SQLite), or set DATABASE_URL=postgres://…
# Checked by reading only (no Docker engine where it was written); see docs/deploying.md, "Containers".

# Node 22 LTS, Debian slim (glibc); not 24, where the SQLite driver (better-sqlite3 12) crashes.
# Both stages MUST use this same image: better-sqlite3 is a native
# addon, built (or downloaded prebuilt) in the build stage for this Node major's ABI and this glibc;
# it would not load under another Node major or on musl (Alpine).
ARG NODE_IMAGE=node:22-slim

FROM ${NODE_IMAGE} AS build
# node-gyp's toolchain, for when better-sqlite3 has no prebuilt binary for this platform.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app

# Dependencies first, so this layer is reused until package.json or package-lock.json change.
# --ignore-scripts: plain `npm ci` would also run this package's `prepare` script (tsc), and the
# sources are not copied yet; it also skips the install scripts of dev-only packages (the embedded
# PostgreSQL binaries used by the tests). `npm rebuild better-sqlite3` then runs the one install
# script the service needs: fetch a prebuilt addon or compile it with the toolchain above.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts && npm rebuild better-sqlite3

# Compile TypeScript to dist/, then drop the dev dependencies (TypeScript, test tools).
COPY tsconfig.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM ${NODE_IMAGE} AS runtime
# NODE_ENV is conventional (the service itself does not read it). HOST=0.0.0.0: the service's own
# default, 127.0.0.1, would not be reachable from outside the container.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 DATABASE_URL=sqlite:/data/animal-store.db
WORKDIR /app
# Application files stay owned by root: the service cannot rewrite its own code.
# package.json is needed at run time: it declares the package an ES module ("type": "module").
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Where the SQLite default lives (unused with a postgres:// DATABASE_URL). Created and handed to the
# non-root user before VOLUME, so a fresh named volume starts out owned by `node`.
RUN mkdir /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080
# Liveness only: /healthz does not touch the database (docs/deploying.md, "Health checks").
# The slim image has no curl, so node itself makes the request.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz', { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself (graceful close within 10 s).
CMD ["node", "dist/cli.js", "serve"]
