# syntax=docker/dockerfile:1
# gate402 in a container: `docker build -t gate402 .` then `docker run -p 8402:8402 -v gate402-data:/data gate402`.
# Checked by packages/server/test/containers.test.ts (dockerfilelint and our own rules); not built on the
# development machine, which has no Docker engine.

# ---- build: install every workspace from the lock, compiling better-sqlite3 if no prebuilt binary fits.
FROM node:20.19-bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# Manifests first, so the dependency layer is rebuilt only when they change.
COPY package.json package-lock.json ./
COPY packages/server/package.json packages/server/
COPY packages/localnet/package.json packages/localnet/
COPY packages/client/package.json packages/client/
COPY packages/dashboard/package.json packages/dashboard/
# --ignore-scripts here: the dashboard's build needs its sources, so scripts run after the COPY below.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY . .
# What an install runs after fetching: native builds (better-sqlite3, anvil), the dashboard build and the
# packages' compilation to JavaScript (what bin/gate402.js runs).
RUN npm rebuild --no-audit --no-fund \
 && npm run build -w packages/dashboard \
 && npm run build \
 && npm prune --omit=dev --no-audit --no-fund

# ---- runtime: the installed tree only, as the unprivileged node user.
FROM node:20.19-bookworm-slim
ENV NODE_ENV=production \
    GATE402_COMPILED=1 \
    HOST=0.0.0.0 \
    PORT=8402 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=build --chown=node:node /app /app
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
USER node
EXPOSE 8402
# Liveness only: readiness (/readyz) also depends on storage, Redis and the chains, which an orchestrator
# or load balancer should ask separately. Five 15 s retries give a first start time to migrate (no
# --start-period: dockerfilelint 1.8 misreads hyphenated HEALTHCHECK options). With TLS_CERT_FILE the
# gateway answers HTTPS only; its certificate names the public host, not 127.0.0.1, and this asks the
# process on its own loopback, so the certificate is not verified here.
HEALTHCHECK --interval=15s --timeout=3s --retries=5 \
  CMD node -e "require(process.env.TLS_CERT_FILE ? 'node:https' : 'node:http').get({ host: '127.0.0.1', port: process.env.PORT || 8402, path: '/healthz', rejectUnauthorized: false }, (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1))"
# The compiled gateway, without npm in between, so SIGTERM reaches the gateway (graceful close).
CMD ["node", "packages/server/bin/gate402.js", "serve"]
