-- sessions_last_activity_index
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- CreateIndex
CREATE INDEX "sessions_last_activity_at_idx" ON "sessions"("last_activity_at");

COMMIT;
