-- Idempotency records store what the operation produced, not REST's HTTP answer (issue 24
-- item 3): the operation's name and its typed outcome (`service::idempotency::Outcome` as JSON),
-- so that each door renders a replay in its own dialect. Records written before this migration
-- keep their `response_*`/`generation_id` columns and are still replayed from them until they
-- expire (48 h); new records leave those columns empty. A later migration may drop them.
ALTER TABLE idempotency_records ADD COLUMN operation TEXT;
ALTER TABLE idempotency_records ADD COLUMN outcome JSONB;
