-- sessions_ingest
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- AlterTable
ALTER TABLE "sessions" ADD COLUMN     "last_role" "MessageRole",
ADD COLUMN     "open_tool_use_ids" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "system_tokens" INTEGER NOT NULL DEFAULT 0;

-- AlterTable
ALTER TABLE "messages" ADD COLUMN     "meta" JSONB,
ADD COLUMN     "tool_use_ids" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- AlterTable
ALTER TABLE "idempotency_records" ALTER COLUMN "response" SET DATA TYPE JSON;

-- CreateIndex
CREATE INDEX "messages_tool_use_ids_idx" ON "messages" USING GIN ("tool_use_ids" array_ops);

COMMIT;
