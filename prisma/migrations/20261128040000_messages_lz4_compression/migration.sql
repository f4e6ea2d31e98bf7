-- messages_lz4_compression
-- Wrapped in a transaction so a failed migration leaves nothing half-applied.
-- The blocks and raw columns of a message each hold the whole text appended: a 30 MB tool result is two 30 MB
-- json values. The default TOAST compression, pglz, took about 0.9 s of the INSERT of such an append on this
-- machine, lz4 takes about 0.3 s for about the same stored size, 10.7 against 10.1 MB, and decompresses faster
-- on reads. See docs/reliability.md, A 30 MB tool result. Compression is lossless: the json text comes back byte
-- for byte, Guarantee 1. Only values written from now on use it. PostgreSQL 15 does not pass SET COMPRESSION on
-- to existing partitions, so each partition of messages is altered too, and partitions created later take the
-- setting of the parent. Needs a server built with lz4: PostgreSQL 14 and later from Debian and the official
-- images are.
BEGIN;

ALTER TABLE "messages" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p0" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p1" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p2" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p3" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p4" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p5" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p6" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p7" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p8" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p9" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p10" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p11" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p12" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p13" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p14" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;
ALTER TABLE "messages_p15" ALTER COLUMN "blocks" SET COMPRESSION lz4, ALTER COLUMN "meta" SET COMPRESSION lz4, ALTER COLUMN "raw" SET COMPRESSION lz4;

COMMIT;
