-- init
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- CreateEnum
CREATE TYPE "ApiKeyScope" AS ENUM ('ingest', 'read', 'admin');

-- CreateEnum
CREATE TYPE "MessageRole" AS ENUM ('system', 'user', 'assistant', 'tool');

-- CreateEnum
CREATE TYPE "ContextVersionCause" AS ENUM ('compaction', 'restore', 'goal_update', 'watermark');

-- CreateEnum
CREATE TYPE "CheckpointLevel" AS ENUM ('recent', 'old', 'ancient', 'ultra');

-- CreateEnum
CREATE TYPE "SnapshotKind" AS ENUM ('pre_compaction', 'threshold', 'manual');

-- CreateEnum
CREATE TYPE "CompactionTrigger" AS ENUM ('threshold', 'manual', 'watermark', 'ingest');

-- CreateEnum
CREATE TYPE "CompactionStatus" AS ENUM ('queued', 'running', 'succeeded', 'skipped', 'failed');

-- CreateTable
CREATE TABLE "tenants" (
    "id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "settings" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenants_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "hash" TEXT NOT NULL,
    "scopes" "ApiKeyScope"[],
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sessions" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "external_id" VARCHAR(128) NOT NULL,
    "model" TEXT NOT NULL,
    "context_window" INTEGER NOT NULL,
    "output_reserve" INTEGER NOT NULL,
    "policy" JSONB NOT NULL,
    "goal" JSONB,
    "head_version_id" UUID,
    "last_seq" INTEGER NOT NULL DEFAULT 0,
    "history_tokens" BIGINT NOT NULL DEFAULT 0,
    "context_tokens" INTEGER NOT NULL DEFAULT 0,
    "utilization" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "compactions" INTEGER NOT NULL DEFAULT 0,
    "reliability" DOUBLE PRECISION,
    "forked_from_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,
    "last_activity_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "messages" (
    "session_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" "MessageRole" NOT NULL,
    "blocks" JSONB NOT NULL,
    "raw" JSON NOT NULL,
    "format" TEXT NOT NULL,
    "pinned" BOOLEAN NOT NULL DEFAULT false,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "tokens" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "messages_pkey" PRIMARY KEY ("session_id","seq")
);

-- CreateTable
CREATE TABLE "idempotency_records" (
    "session_id" UUID NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "request_hash" TEXT NOT NULL,
    "status" INTEGER NOT NULL,
    "response" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("session_id","key")
);

-- CreateTable
CREATE TABLE "context_versions" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "number" INTEGER NOT NULL,
    "parent_id" UUID,
    "cause" "ContextVersionCause" NOT NULL,
    "covers_through_seq" INTEGER NOT NULL,
    "treatments" JSONB NOT NULL DEFAULT '{}',
    "watermark_seq" INTEGER,
    "goal_block" JSONB,
    "prefix_tokens" INTEGER NOT NULL,
    "compaction_job_id" UUID,
    "restored_from_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "context_versions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "checkpoints" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "from_seq" INTEGER NOT NULL,
    "to_seq" INTEGER NOT NULL,
    "level" "CheckpointLevel" NOT NULL,
    "text" TEXT NOT NULL,
    "original_tokens" INTEGER NOT NULL,
    "tokens" INTEGER NOT NULL,
    "aged_from_id" UUID,
    "key_decisions" JSONB NOT NULL DEFAULT '[]',
    "files_modified" JSONB NOT NULL DEFAULT '[]',
    "next_steps" JSONB NOT NULL DEFAULT '[]',
    "facts_ledger" JSONB,
    "facts_survived" DOUBLE PRECISION,
    "compaction_job_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "checkpoints_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "version_checkpoints" (
    "version_id" UUID NOT NULL,
    "checkpoint_id" UUID NOT NULL,
    "position" INTEGER NOT NULL,

    CONSTRAINT "version_checkpoints_pkey" PRIMARY KEY ("version_id","position")
);

-- CreateTable
CREATE TABLE "artifacts" (
    "id" TEXT NOT NULL,
    "session_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "tool_use_id" TEXT,
    "tool_name" TEXT,
    "media_type" TEXT NOT NULL DEFAULT 'text/plain',
    "content" BYTEA NOT NULL,
    "bytes" INTEGER NOT NULL,
    "tokens" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "artifacts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "version_artifacts" (
    "version_id" UUID NOT NULL,
    "artifact_id" TEXT NOT NULL,

    CONSTRAINT "version_artifacts_pkey" PRIMARY KEY ("version_id","artifact_id")
);

-- CreateTable
CREATE TABLE "snapshots" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "version_id" UUID,
    "kind" "SnapshotKind" NOT NULL,
    "label" TEXT,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "compaction_job_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "snapshots_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "compaction_jobs" (
    "id" UUID NOT NULL,
    "session_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "trigger" "CompactionTrigger" NOT NULL,
    "status" "CompactionStatus" NOT NULL DEFAULT 'queued',
    "reason" TEXT,
    "policy" JSONB NOT NULL,
    "dry_run" BOOLEAN NOT NULL DEFAULT false,
    "from_seq" INTEGER,
    "to_seq" INTEGER,
    "base_version_id" UUID,
    "result_version_id" UUID,
    "steps" JSONB NOT NULL DEFAULT '[]',
    "intermediate" JSONB NOT NULL DEFAULT '{}',
    "tokens_before" INTEGER,
    "tokens_after" INTEGER,
    "llm_calls" INTEGER NOT NULL DEFAULT 0,
    "llm_input_tokens" INTEGER NOT NULL DEFAULT 0,
    "llm_output_tokens" INTEGER NOT NULL DEFAULT 0,
    "llm_cost_usd" DECIMAL(14,6) NOT NULL DEFAULT 0,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "duration_ms" INTEGER,
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "compaction_jobs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "events" (
    "id" BIGSERIAL NOT NULL,
    "session_id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "type" TEXT NOT NULL,
    "line" TEXT NOT NULL,
    "data" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "events_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "usage_points" (
    "id" BIGSERIAL NOT NULL,
    "session_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "context_tokens" INTEGER NOT NULL,
    "budget" INTEGER NOT NULL,
    "threshold" INTEGER NOT NULL,
    "compaction_job_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "usage_points_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "tenants_name_key" ON "tenants"("name");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_hash_key" ON "api_keys"("hash");

-- CreateIndex
CREATE INDEX "api_keys_tenant_id_created_at_idx" ON "api_keys"("tenant_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "sessions_head_version_id_key" ON "sessions"("head_version_id");

-- CreateIndex
CREATE INDEX "sessions_tenant_id_last_activity_at_idx" ON "sessions"("tenant_id", "last_activity_at" DESC);

-- CreateIndex
CREATE INDEX "sessions_tenant_id_model_idx" ON "sessions"("tenant_id", "model");

-- CreateIndex
CREATE INDEX "sessions_tenant_id_utilization_idx" ON "sessions"("tenant_id", "utilization");

-- CreateIndex
CREATE UNIQUE INDEX "sessions_tenant_id_external_id_key" ON "sessions"("tenant_id", "external_id");

-- CreateIndex
CREATE INDEX "idempotency_records_created_at_idx" ON "idempotency_records"("created_at");

-- CreateIndex
CREATE UNIQUE INDEX "context_versions_session_id_number_key" ON "context_versions"("session_id", "number");

-- CreateIndex
CREATE INDEX "checkpoints_session_id_from_seq_idx" ON "checkpoints"("session_id", "from_seq");

-- CreateIndex
CREATE INDEX "version_checkpoints_checkpoint_id_idx" ON "version_checkpoints"("checkpoint_id");

-- CreateIndex
CREATE INDEX "artifacts_session_id_seq_idx" ON "artifacts"("session_id", "seq");

-- CreateIndex
CREATE INDEX "version_artifacts_artifact_id_idx" ON "version_artifacts"("artifact_id");

-- CreateIndex
CREATE INDEX "snapshots_session_id_created_at_idx" ON "snapshots"("session_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "snapshots_compaction_job_id_idx" ON "snapshots"("compaction_job_id");

-- CreateIndex
CREATE INDEX "compaction_jobs_session_id_created_at_idx" ON "compaction_jobs"("session_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "compaction_jobs_tenant_id_created_at_idx" ON "compaction_jobs"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "compaction_jobs_status_created_at_idx" ON "compaction_jobs"("status", "created_at");

-- CreateIndex
CREATE INDEX "events_session_id_id_idx" ON "events"("session_id", "id");

-- CreateIndex
CREATE INDEX "events_tenant_id_created_at_idx" ON "events"("tenant_id", "created_at");

-- CreateIndex
CREATE INDEX "usage_points_session_id_id_idx" ON "usage_points"("session_id", "id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_head_version_id_fkey" FOREIGN KEY ("head_version_id") REFERENCES "context_versions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "context_versions" ADD CONSTRAINT "context_versions_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "context_versions" ADD CONSTRAINT "context_versions_parent_id_fkey" FOREIGN KEY ("parent_id") REFERENCES "context_versions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "checkpoints" ADD CONSTRAINT "checkpoints_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "checkpoints" ADD CONSTRAINT "checkpoints_aged_from_id_fkey" FOREIGN KEY ("aged_from_id") REFERENCES "checkpoints"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "version_checkpoints" ADD CONSTRAINT "version_checkpoints_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "context_versions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "version_checkpoints" ADD CONSTRAINT "version_checkpoints_checkpoint_id_fkey" FOREIGN KEY ("checkpoint_id") REFERENCES "checkpoints"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "artifacts" ADD CONSTRAINT "artifacts_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "version_artifacts" ADD CONSTRAINT "version_artifacts_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "context_versions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "version_artifacts" ADD CONSTRAINT "version_artifacts_artifact_id_fkey" FOREIGN KEY ("artifact_id") REFERENCES "artifacts"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "snapshots" ADD CONSTRAINT "snapshots_version_id_fkey" FOREIGN KEY ("version_id") REFERENCES "context_versions"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "compaction_jobs" ADD CONSTRAINT "compaction_jobs_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "events" ADD CONSTRAINT "events_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "usage_points" ADD CONSTRAINT "usage_points_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

COMMIT;
