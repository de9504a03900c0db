# syntax=docker/dockerfile:1
# Animal Store container image: `docker build -t animal-store .`, then
# `docker run -p 8080:8080 -v animal-store-data:/data animal-store` (SQLite), or set DATABASE_URL=postgres://…
# Checked by reading and by test/ops/containers.test.ts (no Docker engine where it was written); see
# docs/deploying.md, "Containers".

# Node.js 24 LTS on Debian slim, pinned by digest so that a re-pushed tag cannot change what is built.
# The digest is the multi-platform image index of `node:24-slim` as pinned in several public
# repositories in 2026 (no registry was reachable where this was written, so it was not resolved
# here). Refresh it deliberately, with the tag's current digest, from either of:
#   docker buildx imagetools inspect node:24-slim            (the "Digest:" line)
#   skopeo inspect --format '{{.Digest}}' docker://docker.io/library/node:24-slim
# Renovate and Dependabot update such pins by themselves.
ARG NODE_IMAGE=node:24-slim@sha256:a9f5f7c91a432850b2a8a7797adf5eadb6c733ceed61167806cee7ea7fbc29df

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# --ignore-scripts: no install script is needed (better-sqlite3 13 ships its binary for glibc and
# musl, x64 and arm64), plain `npm ci` would run this package's `prepare` (tsc) before the sources
# are here, and the dev-only `node` package would download a second Node.js.
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY scripts/build-commit.mjs ./scripts/
COPY src ./src
# The git commit built (the context has no .git): `docker build --build-arg SOURCE_COMMIT=$(git rev-parse HEAD) .`
# It becomes the `commit` label of animal_store_build_info, so a mixed fleet shows on /metrics.
ARG SOURCE_COMMIT=unknown
RUN SOURCE_COMMIT=${SOURCE_COMMIT} npm run build

FROM ${NODE_IMAGE} AS runtime
# NODE_ENV is conventional (the service itself does not read it). HOST=0.0.0.0: the service's own
# default, 127.0.0.1, would not be reachable from outside the container. The same for the metrics
# listener (METRICS_PORT 9464): reachable by a scraper on the container network, but publish it to
# nobody else (it needs no key).
# SHUTDOWN_DRAIN_MS=5000: on SIGTERM, 5 s with /readyz at 503 (still serving) before closing, so a
# balancer polling readiness stops sending first; the orchestrator's grace must exceed it + 10 s.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8080 METRICS_HOST=0.0.0.0 DATABASE_URL=sqlite:/data/animal-store.db SHUTDOWN_DRAIN_MS=5000
WORKDIR /app
# Application files stay owned by root: the service cannot rewrite its own code.
# package.json is needed at run time: it declares the package an ES module ("type": "module").
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
# Where the SQLite default lives (unused with a postgres:// DATABASE_URL). Created and handed to the
# non-root user before VOLUME, so a fresh named volume starts out owned by it; 0700 like the folder
# the service itself would create.
RUN mkdir -m 0700 /data && chown node:node /data
VOLUME /data
# The image's unprivileged `node` user, by number, so that Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 8080 9464
# Liveness only: /healthz does not touch the database (docs/deploying.md, "Health checks").
# The slim image has no curl, so node itself makes the request.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz', { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form: node is PID 1 and receives SIGTERM itself (graceful close within 10 s).
CMD ["node", "--max-semi-space-size=16", "dist/cli.js", "serve"]
