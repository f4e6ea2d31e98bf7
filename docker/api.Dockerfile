# Compactor API image; also runs `prisma migrate deploy` as the compose `migrate` service.
# Build from the repository root:  docker build -f docker/api.Dockerfile -t compactor-api .

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
RUN NX_DAEMON=false NX_NO_CLOUD=true NEXT_TELEMETRY_DISABLED=1 npx nx run api:build

# --- deps: production dependencies plus what `prisma migrate deploy` needs ---
FROM node:20-bookworm-slim AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# Migrations run from this image, so it keeps the Prisma CLI and adapter-pg7 (imported by
# prisma.config.ts). Both are dev dependencies: they are promoted to dependencies in this copy
# of package.json, which adds two packages instead of every dev dependency (Nx, SWC, ESLint...).
RUN for name in prisma adapter-pg7; do \
      spec="$(node -p "require('./package.json').devDependencies?.['$name'] ?? ''")"; \
      if [ -n "$spec" ]; then npm pkg delete "devDependencies.$name" && npm pkg set "dependencies.$name=$spec"; fi; \
    done \
    && npm install --omit=dev --ignore-scripts \
    && test -x node_modules/.bin/prisma && test -f node_modules/adapter-pg7/package.json

# --- runtime ---
FROM node:20-bookworm-slim AS runtime
WORKDIR /app
# CHECKPOINT_DISABLE: the Prisma CLI would otherwise phone home on every migrate run.
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 \
    CHECKPOINT_DISABLE=1 PRISMA_HIDE_UPDATE_MESSAGE=1 \
    NPM_CONFIG_UPDATE_NOTIFIER=false
COPY --from=deps /app/package.json /app/package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY prisma ./prisma
COPY prisma.config.ts ./
USER node
EXPOSE 3000
# /health is liveness only (readiness is /health/ready): a database outage must not mark the
# API unhealthy, which would also hold back the dashboard (depends_on: service_healthy).
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/apps/api/apps/api/src/main.js"]
