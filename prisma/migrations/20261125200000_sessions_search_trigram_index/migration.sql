-- sessions_search_trigram_index
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
-- Session search (GET /v1/sessions?search=) is `external_id ILIKE '%term%'` within a tenant: no b-tree serves a
-- substring, so it read every session of the tenant. A trigram GIN index does (pg_trgm folds case, so ILIKE uses it
-- too). At 100,000 sessions: docs/benchmarks.md, "Session search". pg_trgm is a trusted extension (PostgreSQL 13+), so
-- the database owner may create it. Declared in schema.prisma (postgresqlExtensions), so the drift check covers both.
BEGIN;

-- CreateExtension
CREATE EXTENSION IF NOT EXISTS "pg_trgm";

-- CreateIndex
CREATE INDEX "sessions_external_id_trgm_idx" ON "sessions" USING GIN ("external_id" gin_trgm_ops);

COMMIT;
