-- sessions_llm_outage_hold_index
-- Every worker's compaction sweep (every COMPACTION_SWEEP_INTERVAL_MS) looks for sessions held by an LLM outage
-- (SessionRepository.llmOutageHolds). Nearly no session is: a partial index answers that without a scan of sessions.
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

CREATE INDEX "sessions_llm_outage_hold_idx" ON "sessions"("compaction_hold_at") WHERE "compaction_hold_reason" = 'llm-outage' AND "compaction_hold_tokens" IS NOT NULL;

COMMIT;
