-- compaction_jobs_tenant_analytics_index
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- DropIndex
DROP INDEX "compaction_jobs_tenant_id_created_at_idx";

-- CreateIndex
CREATE INDEX "compaction_jobs_tenant_analytics_idx" ON "compaction_jobs"("tenant_id", "created_at", "status", "dry_run", "tokens_before", "tokens_after", "llm_calls", "llm_input_tokens", "llm_output_tokens", "llm_cost_usd");

COMMIT;
