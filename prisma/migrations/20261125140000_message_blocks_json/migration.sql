-- message_blocks_json
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

-- json, not jsonb: the blocks of new messages come back with their keys in the order they were sent
-- (a tool_use input is served as the model wrote it). Rows stored before keep jsonb's order.
ALTER TABLE "messages" ALTER COLUMN "blocks" SET DATA TYPE JSON,
ALTER COLUMN "meta" SET DATA TYPE JSON;

COMMIT;
