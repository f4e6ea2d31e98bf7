-- compaction_checkpoints
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- AlterTable
ALTER TABLE "checkpoints" ADD COLUMN     "content_id" TEXT NOT NULL;

-- CreateIndex
CREATE UNIQUE INDEX "checkpoints_session_id_content_id_key" ON "checkpoints"("session_id", "content_id");

COMMIT;
