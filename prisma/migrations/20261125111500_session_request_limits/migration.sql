-- session_request_limits
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "calibration" DOUBLE PRECISION NOT NULL DEFAULT 1,
ADD COLUMN     "compaction_hold_tokens" INTEGER,
ADD COLUMN     "request_max_tokens" INTEGER,
ADD COLUMN     "tool_schema_tokens" INTEGER NOT NULL DEFAULT 0;

-- Sessions whose default output reserve (the model's maximum output) exceeded a quarter of an explicit
-- window had a budget of 0 or less (SPEC.md "Budget": the default reserve is capped at 25% of the window).
UPDATE "sessions"
SET "output_reserve" = "context_window" / 4
WHERE "context_window" - "output_reserve" - GREATEST(256, CEIL("context_window" * 0.02)) < GREATEST(LEAST(2048, "context_window" / 2), CEIL("context_window" * 0.1));

COMMIT;
