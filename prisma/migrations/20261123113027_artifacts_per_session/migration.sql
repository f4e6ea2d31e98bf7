-- artifacts_per_session
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- DropForeignKey
ALTER TABLE "version_artifacts" DROP CONSTRAINT "version_artifacts_artifact_id_fkey";

-- DropIndex
DROP INDEX "version_artifacts_artifact_id_idx";

-- AlterTable
ALTER TABLE "artifacts" DROP CONSTRAINT "artifacts_pkey",
ADD CONSTRAINT "artifacts_pkey" PRIMARY KEY ("session_id", "id");

-- AlterTable
ALTER TABLE "version_artifacts" ADD COLUMN     "session_id" UUID NOT NULL;

-- CreateIndex
CREATE INDEX "artifacts_id_idx" ON "artifacts"("id");

-- CreateIndex
CREATE INDEX "version_artifacts_session_id_artifact_id_idx" ON "version_artifacts"("session_id", "artifact_id");

-- AddForeignKey
ALTER TABLE "version_artifacts" ADD CONSTRAINT "version_artifacts_session_id_artifact_id_fkey" FOREIGN KEY ("session_id", "artifact_id") REFERENCES "artifacts"("session_id", "id") ON DELETE RESTRICT ON UPDATE CASCADE;

COMMIT;
