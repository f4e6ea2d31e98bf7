-- session_compaction_hold_reason
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "compaction_hold_at" TIMESTAMPTZ(3),
ADD COLUMN     "compaction_hold_count" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "compaction_hold_reason" TEXT;

COMMIT;
