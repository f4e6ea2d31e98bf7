-- api_key_expiry
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "expires_at" TIMESTAMPTZ(3);

COMMIT;
