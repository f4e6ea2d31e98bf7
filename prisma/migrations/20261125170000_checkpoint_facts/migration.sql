-- The Facts section of a checkpoint: the facts-ledger entries its summary lacked (SPEC.md "Facts ledger").
BEGIN;
ALTER TABLE "checkpoints" ADD COLUMN "facts" TEXT;
COMMIT;
