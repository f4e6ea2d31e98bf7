-- sessions_external_id_statistics
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
-- Session search orders by activity and takes a page. With the default statistics the planner estimates
-- about 1% of sessions for any '%term%' and, for a term that matches a few hundred of 100,000 sessions, walks the
-- activity index filtering every row (40 ms) instead of reading the trigram index and sorting the matches (0.7 ms).
-- A finer histogram of external_id gives it the real share (docs/benchmarks.md, "Session search").
-- Prisma's schema cannot express a column's statistics target: migrations.int-spec.ts applies this statement
-- to the database built from schema.prisma too (RAW_SQL_ONLY), so the drift check still compares everything else.
BEGIN;

ALTER TABLE "sessions" ALTER COLUMN "external_id" SET STATISTICS 1000;

COMMIT;
