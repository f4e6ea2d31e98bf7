-- session_forks_index
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- CreateIndex
CREATE INDEX "sessions_forked_from_id_idx" ON "sessions"("forked_from_id");

COMMIT;
