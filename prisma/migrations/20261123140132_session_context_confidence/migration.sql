-- session_context_confidence
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "context_confidence" DOUBLE PRECISION;

COMMIT;
