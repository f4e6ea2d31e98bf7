# Compactor dashboard image: `next start` on the Next.js build of apps/dashboard.
# Build from the repository root:  docker build -f docker/dashboard.Dockerfile -t compactor-dashboard .

# --- build: full dependency tree, Next.js build through Nx ---
FROM node:20-bookworm-slim AS build
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
# `npm ci` rejects this lockfile. Install scripts stay off, as package.json's allowScripts says.
RUN npm install --ignore-scripts
COPY . .
# No `prisma generate`: the dashboard talks to the API over HTTP and never imports the client.
RUN NX_DAEMON=false NX_NO_CLOUD=true NEXT_TELEMETRY_DISABLED=1 npx nx run dashboard:build \
    && rm -rf apps/dashboard/.next/cache

# --- deps: production dependencies only ---
FROM node:20-bookworm-slim AS deps
WORKDIR /app
ENV NPM_CONFIG_UPDATE_NOTIFIER=false NPM_CONFIG_FUND=false NPM_CONFIG_AUDIT=false
COPY package.json package-lock.json ./
RUN npm install --omit=dev --ignore-scripts

# --- runtime ---
FROM node:20-bookworm-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production NEXT_TELEMETRY_DISABLED=1 DASHBOARD_HOST=0.0.0.0 DASHBOARD_PORT=3001
COPY --from=deps /app/package.json /app/package-lock.json ./
COPY --from=deps /app/node_modules ./node_modules
# next start reads apps/dashboard/tsconfig.json, which extends the base config.
COPY tsconfig.base.json ./
# Owned by node: next start writes its cache (.next/cache) at run time.
COPY --from=build --chown=node:node /app/apps/dashboard ./apps/dashboard
USER node
EXPOSE 3001
# `next start apps/dashboard -p 3001 -H 0.0.0.0`, with the port and host taken from the same
# variables the dashboard's config validates; exec so that next receives SIGTERM directly.
CMD ["sh", "-c", "exec node_modules/.bin/next start apps/dashboard -p \"${DASHBOARD_PORT:-3001}\" -H \"${DASHBOARD_HOST:-0.0.0.0}\""]
