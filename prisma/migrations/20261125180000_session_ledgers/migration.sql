-- The session's facts ledger, kept up to date by the workers (SPEC.md "Facts ledger").
BEGIN;
CREATE TABLE "session_ledgers" (
    "session_id" UUID NOT NULL,
    "through_seq" INTEGER NOT NULL,
    "state" JSONB NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "session_ledgers_pkey" PRIMARY KEY ("session_id")
);
ALTER TABLE "session_ledgers" ADD CONSTRAINT "session_ledgers_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
COMMIT;
