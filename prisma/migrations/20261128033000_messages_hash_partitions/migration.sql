-- messages_hash_partitions (issue #18 item 2): `messages` becomes a table partitioned by HASH(session_id)
-- in 16 partitions, with the same columns, defaults, primary key (session_id, seq), GIN index on
-- tool_use_ids and foreign key to sessions (ON DELETE CASCADE) as before. Every statement on
-- messages names one session_id, so each touches one partition: vacuum, index builds and the
-- retention job's cascaded deletes work per partition (~1/16 of the table each).
-- 16 partitions: at the 10M messages measured (docs/benchmarks.md, history) a partition holds
-- ~600k rows, ~1 GB, and hash partitions can later be split without rewriting the others (remainder r
-- of modulus 16 becomes remainders r and r + 16 of modulus 32), so more partitions now would only
-- add planning and file overhead for small deployments.
-- Prisma does not model partitioning: schema.prisma describes the parent table, and the drift check
-- (libs/persistence/src/migrations.int-spec.ts) compares the parent with the partitions left out.
-- An existing deployment's rows are moved: the old table is locked, renamed, copied into the new
-- one, and dropped, in one transaction (appends wait for it, and a failure leaves the old table as it was).
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
BEGIN;

LOCK TABLE "messages" IN ACCESS EXCLUSIVE MODE;
ALTER TABLE "messages" RENAME TO "messages_unpartitioned";
ALTER TABLE "messages_unpartitioned" RENAME CONSTRAINT "messages_pkey" TO "messages_unpartitioned_pkey";
ALTER TABLE "messages_unpartitioned" RENAME CONSTRAINT "messages_session_id_fkey" TO "messages_unpartitioned_session_id_fkey";
ALTER INDEX "messages_tool_use_ids_idx" RENAME TO "messages_unpartitioned_tool_use_ids_idx";

-- The columns in the old table's order, with its defaults and nullability.
CREATE TABLE "messages" (
    "session_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "role" "MessageRole" NOT NULL,
    "blocks" JSON NOT NULL,
    "raw" JSON NOT NULL,
    "format" TEXT NOT NULL,
    "pinned" BOOLEAN NOT NULL DEFAULT false,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "tokens" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "meta" JSON,
    "tool_use_ids" TEXT[] DEFAULT ARRAY[]::TEXT[]
) PARTITION BY HASH ("session_id");

CREATE TABLE "messages_p0" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 0);
CREATE TABLE "messages_p1" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 1);
CREATE TABLE "messages_p2" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 2);
CREATE TABLE "messages_p3" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 3);
CREATE TABLE "messages_p4" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 4);
CREATE TABLE "messages_p5" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 5);
CREATE TABLE "messages_p6" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 6);
CREATE TABLE "messages_p7" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 7);
CREATE TABLE "messages_p8" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 8);
CREATE TABLE "messages_p9" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 9);
CREATE TABLE "messages_p10" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 10);
CREATE TABLE "messages_p11" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 11);
CREATE TABLE "messages_p12" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 12);
CREATE TABLE "messages_p13" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 13);
CREATE TABLE "messages_p14" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 14);
CREATE TABLE "messages_p15" PARTITION OF "messages" FOR VALUES WITH (MODULUS 16, REMAINDER 15);

INSERT INTO "messages" ("session_id", "seq", "role", "blocks", "raw", "format", "pinned", "tags", "tokens", "created_at", "meta", "tool_use_ids")
SELECT "session_id", "seq", "role", "blocks", "raw", "format", "pinned", "tags", "tokens", "created_at", "meta", "tool_use_ids"
FROM "messages_unpartitioned";

-- Indexes and constraints after the copy (one build per partition instead of row-by-row upkeep).
ALTER TABLE "messages" ADD CONSTRAINT "messages_pkey" PRIMARY KEY ("session_id", "seq");
CREATE INDEX "messages_tool_use_ids_idx" ON "messages" USING GIN ("tool_use_ids");
ALTER TABLE "messages" ADD CONSTRAINT "messages_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

DROP TABLE "messages_unpartitioned";
ANALYZE "messages";

COMMIT;
