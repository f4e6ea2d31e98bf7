# Compactor worker image: the BullMQ processors. Scale it with `--scale worker=N`.
# Build from the repository root:  docker build -f docker/worker.Dockerfile -t compactor-worker .

# --- build: full dependency tree, Prisma client generation, Nx build ---
FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# `npm ci` rejects this lockfile. Install scripts stay off, as package.json's allowScripts says:
# none is needed, and Prisma's would try to download native engines the project does not use.
RUN npm install --ignore-scripts
COPY . .
# The generator (engineType "client") needs no engine; /bin/true stops Prisma looking for one.
RUN PRISMA_QUERY_ENGINE_LIBRARY=/bin/true PRISMA_SCHEMA_ENGINE_BINARY=/bin/true PRISMA_HIDE_UPDATE_MESSAGE=1 \
    npx prisma generate
RUN NX_DAEMON=false NX_NO_CLOUD=true NEXT_TELEMETRY_DISABLED=1 npx nx run worker:build

# --- deps: production dependencies only (migrations run from the api image) ---
FROM node:20-bookworm-slim AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
RUN npm install --omit=dev --ignore-scripts

# --- runtime ---
FROM node:20-bookworm-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production
COPY --from=deps /app/package.json /app/package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Not read by the worker at run time; shipped so every app image holds the schema it was built from.
COPY prisma ./prisma
COPY prisma.config.ts ./
USER node
# No EXPOSE and no HEALTHCHECK: the worker listens on no port; it exits when PostgreSQL or
# Redis is unreachable at start, and compose restarts it.
CMD ["node", "dist/apps/worker/apps/worker/src/main.js"]
